DROP TABLE sessions;
DROP TABLE api_tokens;
DROP TABLE readers;
