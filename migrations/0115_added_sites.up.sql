-- The Sites an Owner adds at run time from a family (docs/adr/0019): a name,
-- the family, its Library, its hosts and the family's options. A removed Site
-- keeps its row (removed_at set) so that adding it back with the same name and
-- family resumes its Bookmarks. Every replica rebuilds its registry's added
-- Sites from the rows where removed_at IS NULL every SITES_REFRESH.
CREATE TABLE added_sites (
    site       text PRIMARY KEY CHECK (site ~ '^[a-z][a-z0-9-]{0,39}$'),
    family     text NOT NULL,
    kind       text NOT NULL CHECK (kind IN ('manga', 'novel')),
    hosts      text[] NOT NULL CHECK (cardinality(hosts) > 0),
    options    jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    removed_at timestamptz
);

-- A Series is gone when its Site was removed (gone_reason 'site removed'):
-- its Bookmarks stay, it is not polled, and adding the Site back clears it.
ALTER TABLE series ADD COLUMN gone_at timestamptz, ADD COLUMN gone_reason text;
