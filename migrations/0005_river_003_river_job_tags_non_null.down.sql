-- River main migration 003 [down], from rivermigrate v0.51.2.
DELETE FROM river_migration WHERE version = 3;
ALTER TABLE river_job
    ALTER COLUMN tags DROP NOT NULL,
    ALTER COLUMN tags DROP DEFAULT;
