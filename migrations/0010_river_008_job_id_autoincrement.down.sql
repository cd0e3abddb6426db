-- River main migration 008 [down], from rivermigrate v0.51.2.
DELETE FROM river_migration WHERE line = 'main' AND version = 8;
-- No-op. Postgres sequences already prevent automatically generated job IDs
-- from being reused.
SELECT 1;
