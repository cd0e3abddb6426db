DROP TRIGGER series_cover_addresses ON series;
DROP FUNCTION cover_addresses_keep();
DROP TABLE cover_addresses;
