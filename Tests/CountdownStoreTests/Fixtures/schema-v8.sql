-- table activity
CREATE TABLE "activity" (id TEXT PRIMARY KEY NOT NULL, ord INTEGER NOT NULL, kind TEXT NOT NULL CHECK (kind IN ('countdown', 'elapsed')), phase TEXT NOT NULL CHECK (phase IN ('active', 'paused', 'ended')), stale INTEGER NOT NULL, expired INTEGER NOT NULL, anchor INTEGER NOT NULL, pausedTotal INTEGER NOT NULL, frozenAt INTEGER NOT NULL, content TEXT NOT NULL, countdownStart INTEGER, goalMs INTEGER, staleDate INTEGER, milestones TEXT, nextMilestone INTEGER NOT NULL, endOnExpiry INTEGER, startedAt INTEGER NOT NULL, endedAt INTEGER NOT NULL, endReason TEXT NOT NULL CHECK (endReason IN ('requested', 'expired', 'maxDuration', 'disabled')), dismissAt INTEGER NOT NULL, lastTimestamp INTEGER, liveActivity TEXT, overtime INTEGER NOT NULL DEFAULT 0, groupName TEXT) WITHOUT ROWID;

-- table engine
CREATE TABLE engine (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  now INTEGER NOT NULL,
  nextOrder INTEGER NOT NULL,
  idGeneratorState INTEGER NOT NULL,
  enabled INTEGER NOT NULL,
  maxActivities INTEGER,
  maxActiveDurationMs INTEGER
);

-- table grdb_migrations
CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);

-- table push_budget
CREATE TABLE push_budget (activity TEXT NOT NULL, token TEXT NOT NULL, timestamp INTEGER NOT NULL, notBefore INTEGER NOT NULL, PRIMARY KEY (activity, token)) WITHOUT ROWID;

-- table push_outbox
CREATE TABLE push_outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, activity TEXT NOT NULL, token TEXT NOT NULL, event TEXT NOT NULL, priority INTEGER NOT NULL, timestamp INTEGER NOT NULL, notBefore INTEGER NOT NULL, eventAt INTEGER NOT NULL, payload BLOB NOT NULL, destination TEXT NOT NULL DEFAULT 'apns' CHECK (destination IN ('apns', 'webhook')), apnsID TEXT NOT NULL DEFAULT '', expiration INTEGER);
