DROP TABLE site_health;
DROP TABLE owner_alerts;
