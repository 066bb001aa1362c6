#!/bin/sh
# Runs once, when the postgres volume is first initialised
# (/docker-entrypoint-initdb.d): creates the runtime role the hubs and the
# subscribers connect as. It owns nothing; `hub migrate up --runtime-role
# hookhub_runtime` (the migrate service, as postgres, the owner) grants it
# what it needs (docs/production.md, "Database roles"). For a volume created
# before this script existed, run it by hand once:
#   docker compose exec -e HOOKHUB_RUNTIME_PASSWORD=... postgres sh /docker-entrypoint-initdb.d/10-hookhub-roles.sh
set -eu
psql -v ON_ERROR_STOP=1 -v pw="${HOOKHUB_RUNTIME_PASSWORD:?}" --username "${POSTGRES_USER:-postgres}" --dbname "${POSTGRES_DB:-hub}" <<'SQL'
SELECT format('CREATE ROLE hookhub_runtime LOGIN PASSWORD %L', :'pw')
WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'hookhub_runtime') \gexec
SQL
