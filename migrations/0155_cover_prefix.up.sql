-- Every Cover address a Series has ever named, for the short Cover reference
-- (docs/adr/0032): /covers/<first 20 hex digits> finds the one address here
-- that starts so. Kept by a trigger, so a short reference once sent keeps
-- naming its bytes after an Owner's refetch replaces the Cover, as the full
-- address does. COLLATE "C" orders the key byte-wise, so a prefix is one
-- range of the primary key whatever the database's collation.
CREATE TABLE cover_addresses (
    address text COLLATE "C" PRIMARY KEY
);

INSERT INTO cover_addresses (address)
SELECT DISTINCT cover_address FROM series WHERE cover_address <> '';

CREATE FUNCTION cover_addresses_keep() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO cover_addresses (address) VALUES (NEW.cover_address) ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;

CREATE TRIGGER series_cover_addresses
    AFTER INSERT OR UPDATE OF cover_address ON series
    FOR EACH ROW WHEN (NEW.cover_address <> '')
    EXECUTE FUNCTION cover_addresses_keep();
