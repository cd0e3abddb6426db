-- The alternative titles a Site lists for a Series (the registry's optional
-- AltTitles question, e.g. MangaDex's altTitles): a Series fact, read by the
-- backend's own poll, used only to suggest Works (issue 21).
ALTER TABLE series ADD COLUMN alt_titles text[] NOT NULL DEFAULT '{}';
