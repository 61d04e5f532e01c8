-- An analysts' session: the engine may open the catalog and the lake files
-- the views read (allowed_paths, set before this runs), nothing else; no
-- extension is loaded or installed behind a query; and none of it can be
-- changed back from inside the session.
SET autoload_known_extensions = false;
SET autoinstall_known_extensions = false;
SET enable_external_access = false;
SET lock_configuration = true;
