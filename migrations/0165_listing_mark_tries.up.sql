-- How many confirming polls a listing's mark has asked for (issue 22): a
-- confirming poll that still reads the older chapter (the series page is
-- cached behind the listing) is asked again a bounded number of times,
-- instead of waiting for the covered Series' safety poll.
ALTER TABLE listing_marks ADD COLUMN tries smallint NOT NULL DEFAULT 1 CHECK (tries >= 1);
