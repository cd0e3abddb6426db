DROP TABLE background_pause;
DROP TABLE site_settings;
