-- River main migration 002 [down], from rivermigrate v0.51.2.
DELETE FROM river_migration WHERE version = 2;
DROP TABLE river_job;
DROP FUNCTION river_job_notify;
DROP TYPE river_job_state;

DROP TABLE river_leader;
