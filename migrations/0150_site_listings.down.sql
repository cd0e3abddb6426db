DROP TABLE listing_marks;
DROP TABLE site_listings;
