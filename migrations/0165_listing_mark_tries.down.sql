ALTER TABLE listing_marks DROP COLUMN tries;
