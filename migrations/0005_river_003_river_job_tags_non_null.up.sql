-- River main migration 003 [up], from rivermigrate v0.51.2.
ALTER TABLE river_job ALTER COLUMN tags SET DEFAULT '{}';
UPDATE river_job SET tags = '{}' WHERE tags IS NULL;
ALTER TABLE river_job ALTER COLUMN tags SET NOT NULL;
INSERT INTO river_migration (version) VALUES (3);
