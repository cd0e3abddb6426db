-- River main migration 008 [up], from rivermigrate v0.51.2.
-- No-op. Postgres sequences already prevent automatically generated job IDs
-- from being reused.
SELECT 1;
INSERT INTO river_migration (line, version) VALUES ('main', 8);
