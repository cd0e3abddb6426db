-- River main migration 001 [down], from rivermigrate v0.51.2.

DROP TABLE river_migration;
