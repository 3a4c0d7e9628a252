#include "store/store.hpp"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <limits>
#include <new>
#include <utility>

#include "common/private_folder.hpp"
#include "common/unique_fd.hpp"
#include "store/sqlite_support.hpp"

namespace loopr::store {
namespace {

using namespace detail;

constexpr const char* kDatabaseFileName = "loopr.db";
// PRAGMA application_id of a loopr database: "loop" in ASCII. A database with
// another id belongs to another program and is never migrated.
constexpr std::int32_t kApplicationId = 0x6c6f6f70;
// The longest the io thread waits for a lock another process holds (in WAL
// mode only another writer can: a second looprd on the same state dir, or a
// user writing with the sqlite3 shell).
constexpr int kBusyTimeoutMs = 2000;

// The schema history. Append a step for every change; never edit a released
// one (databases in the field were built by it). A step runs with
// foreign_keys off inside one transaction, followed by foreign_key_check, so
// it may rebuild a table (create the new one, copy, drop, rename). Values
// never appear here: rows a step must add are written with bound parameters
// by code after the migrations.
constexpr StoreMigration kMigrations[] = {
    {1, "create tool_calls and meta", R"sql(
CREATE TABLE meta (
  key   TEXT PRIMARY KEY NOT NULL,
  value ANY NOT NULL
) STRICT;

CREATE TABLE tool_calls (
  id            INTEGER PRIMARY KEY,
  call_id       TEXT    NOT NULL,
  tool          TEXT    NOT NULL,
  lane          TEXT    NOT NULL,
  worktree      TEXT    NOT NULL,
  session       TEXT    NOT NULL,
  args_digest   TEXT    NOT NULL,
  status        TEXT    NOT NULL,
  exit_code     INTEGER,
  duration_ms   INTEGER NOT NULL,
  truncated     INTEGER NOT NULL CHECK (truncated IN (0, 1)),
  error_code    TEXT,
  started_at_ms INTEGER NOT NULL
) STRICT;

CREATE INDEX tool_calls_by_started_at ON tool_calls (started_at_ms);
CREATE INDEX tool_calls_by_tool ON tool_calls (tool);
)sql"},
    {2, "create loops and loop_steps", R"sql(
CREATE TABLE loops (
  id            TEXT    PRIMARY KEY NOT NULL,
  seq           INTEGER NOT NULL UNIQUE,
  type          TEXT    NOT NULL,
  parent_id     TEXT    REFERENCES loops (id),
  status        TEXT    NOT NULL,
  spec          TEXT    NOT NULL,
  state         TEXT    NOT NULL,
  created_at_ms INTEGER NOT NULL,
  updated_at_ms INTEGER NOT NULL
) STRICT;

CREATE INDEX loops_by_status ON loops (status);
CREATE INDEX loops_by_parent ON loops (parent_id);

CREATE TABLE loop_steps (
  id        INTEGER PRIMARY KEY,
  loop_id   TEXT    NOT NULL REFERENCES loops (id),
  iteration INTEGER NOT NULL,
  kind      TEXT    NOT NULL,
  data      TEXT    NOT NULL,
  at_ms     INTEGER NOT NULL
) STRICT;

CREATE INDEX loop_steps_by_loop ON loop_steps (loop_id, iteration, id);
)sql"},
    {3, "create memory_notes and the full-text indexes of notes and conversations", R"sql(
CREATE TABLE memory_notes (
  id            INTEGER PRIMARY KEY,
  note_id       TEXT    NOT NULL UNIQUE,
  owner_uid     INTEGER NOT NULL,
  repo          TEXT    NOT NULL,
  content       TEXT    NOT NULL,
  tags          TEXT    NOT NULL,
  source        TEXT    NOT NULL,
  created_at_ms INTEGER NOT NULL,
  updated_at_ms INTEGER NOT NULL
) STRICT;

CREATE INDEX memory_notes_by_owner ON memory_notes (owner_uid, repo, updated_at_ms);

CREATE VIRTUAL TABLE memory_fts USING fts5(
  content, tags, tokenize = 'unicode61 remove_diacritics 2');

CREATE VIRTUAL TABLE conversation_fts USING fts5(
  text, loop_id UNINDEXED, iteration UNINDEXED, at_ms UNINDEXED,
  tokenize = 'unicode61 remove_diacritics 2');

INSERT INTO conversation_fts (rowid, text, loop_id, iteration, at_ms)
  SELECT id, json_extract(data, '$.turn.text'), loop_id, iteration, at_ms FROM loop_steps
  WHERE kind = 'model_turn' AND json_valid(data) AND json_type(data, '$.turn.text') = 'text'
        AND length(json_extract(data, '$.turn.text')) > 0;
)sql"},
    {4, "create repo_trust", R"sql(
CREATE TABLE repo_trust (
  repo          TEXT    PRIMARY KEY NOT NULL,
  file_hash     TEXT    NOT NULL,
  trusted_at_ms INTEGER NOT NULL
) STRICT;
)sql"},
    {5, "create approval_rules", R"sql(
CREATE TABLE approval_rules (
  id          INTEGER PRIMARY KEY,
  repo        TEXT    NOT NULL,
  rule        TEXT    NOT NULL,
  saved_at_ms INTEGER NOT NULL
) STRICT;
CREATE INDEX approval_rules_by_repo ON approval_rules (repo);
)sql"},
    {6, "tool_calls: the worker that ran each call", R"sql(
ALTER TABLE tool_calls ADD COLUMN worker TEXT NOT NULL DEFAULT 'local';
)sql"},
};

// ---- Start-up: directory, file, inspection, migration -----------------------

// The advice every refusal to use an existing file ends with.
constexpr const char* kLeftUnchanged =
    " loopr did not change the file; move it aside or point --state-dir (LOOPR_STATE_DIR) "
    "elsewhere.";

[[noreturn]] void fail(std::string message) {
  throw StartupError(std::move(message));
}

// mkdir -p with mode 0700 for every component it creates.
void make_state_dir(const std::string& dir) {
  if (dir.empty()) fail("the state directory is empty; set --state-dir or LOOPR_STATE_DIR");
  if (auto made = make_private_folders(dir); !made) {
    if (made.error().code == errc::not_directory) {
      fail("the state directory '" + dir +
           "' is not a directory; point --state-dir (LOOPR_STATE_DIR) at a directory");
    }
    fail("cannot create the state directory '" + dir + "': " + made.error().message +
         "; create it or point --state-dir (LOOPR_STATE_DIR) at a writable directory");
  }
}

// Creates the database file 0600 if it is missing (SQLite gives its -wal and
// -shm files the same mode) and checks that it is a regular file we can write.
void make_database_file(const std::string& path, const std::string& dir) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0600));
  if (!fd) {
    const int err = errno;
    fail("cannot open the state database '" + path + "' for writing: " + std::strerror(err) +
         "; make '" + dir + "' and the file writable, or point --state-dir (LOOPR_STATE_DIR) " +
         "at a writable directory");
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode)) {
    fail("the state database '" + path + "' is not a regular file." + kLeftUnchanged);
  }
}

Connection open_connection(const std::string& path, int flags) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw,
                                 flags | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE, nullptr);
  Connection db(raw);
  if (rc != SQLITE_OK) {
    fail("cannot open the state database '" + path + "': " + describe(db.get(), rc) +
         "; check that the state directory is on a local, writable file system");
  }
  // Defensive: no writable_schema or other ways to corrupt the file by SQL;
  // untrusted schema: a trigger or view in the file cannot call functions
  // with side effects.
  sqlite3_db_config(db.get(), SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_db_config(db.get(), SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  sqlite3_busy_timeout(db.get(), kBusyTimeoutMs);
  return db;
}

[[noreturn]] void fail_unreadable(const std::string& path, sqlite3* db, int rc) {
  const int primary = rc & 0xff;
  if (primary == SQLITE_NOTADB) {
    fail("the state database '" + path + "' is not an SQLite database (" + describe(db, rc) + ")." +
         kLeftUnchanged);
  }
  if (primary == SQLITE_CORRUPT) {
    fail("the state database '" + path + "' is corrupt (" + describe(db, rc) + ")." +
         kLeftUnchanged + " `sqlite3 " + path + " .recover` may save its rows.");
  }
  fail("cannot read the state database '" + path + "': " + describe(db, rc) +
       "; check the file and its directory, or point --state-dir (LOOPR_STATE_DIR) elsewhere");
}

// Reads what the file is, through a read-only connection so that nothing is
// written to a file we may refuse (not even a WAL checkpoint), and refuses
// anything that is not a healthy loopr database at most `current` versions.
// Returns the schema version found (0 for a new, empty file).
int inspect(const std::string& path, int current) {
  Connection db = open_connection(path, SQLITE_OPEN_READONLY);
  std::int64_t application_id = 0;
  std::int64_t version = 0;
  std::int64_t objects = 0;
  int rc = query_int(db.get(), "PRAGMA application_id", application_id);
  if (rc == SQLITE_OK) rc = query_int(db.get(), "PRAGMA user_version", version);
  if (rc == SQLITE_OK) rc = query_int(db.get(), "SELECT count(*) FROM sqlite_schema", objects);
  if (rc != SQLITE_OK) fail_unreadable(path, db.get(), rc);

  const bool fresh = application_id == 0 && version == 0 && objects == 0;
  if (!fresh && application_id != kApplicationId) {
    fail("the state database '" + path +
         "' is an SQLite database that loopr did not write (application_id " +
         std::to_string(application_id) + ", user_version " + std::to_string(version) + ")." +
         kLeftUnchanged);
  }
  if (version > current) {
    fail("the state database '" + path + "' has schema version " + std::to_string(version) +
         ", written by a newer loopr (this build knows versions up to " + std::to_string(current) +
         "); upgrade loopr or point --state-dir (LOOPR_STATE_DIR) elsewhere. "
         "loopr did not change the file.");
  }
  if (version < 0) {
    fail("the state database '" + path + "' has an invalid schema version " +
         std::to_string(version) + "." + kLeftUnchanged);
  }
  if (!fresh) {
    // Reads every page once: a corrupt file is refused at start rather than
    // failing calls later.
    std::string verdict;
    rc = query_text(db.get(), "PRAGMA quick_check(1)", verdict);
    if (rc != SQLITE_OK) fail_unreadable(path, db.get(), rc);
    if (verdict != "ok") {
      fail("the state database '" + path + "' is corrupt (quick_check: " + verdict.substr(0, 200) +
           ")." + kLeftUnchanged + " `sqlite3 " + path + " .recover` may save its rows.");
    }
  }
  return static_cast<int>(version);
}

void set_pragma(sqlite3* db, const std::string& path, const char* sql) {
  const int rc = exec(db, sql);
  if (rc != SQLITE_OK) {
    fail("cannot configure the state database '" + path + "' (" + sql + "): " + describe(db, rc));
  }
}

void enter_wal_mode(sqlite3* db, const std::string& path) {
  std::string mode;
  const int rc = query_text(db, "PRAGMA journal_mode = WAL", mode);
  if (rc != SQLITE_OK || mode != "wal") {
    fail("cannot put the state database '" + path + "' in WAL mode (" +
         (rc != SQLITE_OK ? describe(db, rc) : "journal mode stayed '" + mode + "'") +
         "); WAL needs a local file system with shared memory, point --state-dir "
         "(LOOPR_STATE_DIR) at one");
  }
}

// One schema step, atomically with its version bump. Re-reads the version
// inside the write transaction, so a second process migrating at the same
// moment is harmless.
void apply_step(sqlite3* db, const std::string& path, const StoreMigration& step, int current) {
  const std::string from = std::to_string(step.version - 1);
  const std::string to = std::to_string(step.version);
  auto step_failed = [&](int rc, const std::string& what) {
    // Read the connection's message before ROLLBACK replaces it.
    const std::string cause = rc == SQLITE_OK ? what : what + " (" + describe(db, rc) + ")";
    exec(db, "ROLLBACK");
    fail("cannot upgrade the state database '" + path + "' from schema version " + from + " to " +
         to + " (" + std::string(step.summary) + "): " + cause +
         ". The database was left at version " + from +
         ", unchanged; report this to the "
         "loopr developers, or point --state-dir (LOOPR_STATE_DIR) elsewhere");
  };

  int rc = exec(db, "BEGIN IMMEDIATE");
  if (rc != SQLITE_OK) step_failed(rc, "cannot begin the transaction");
  std::int64_t version = 0;
  rc = query_int(db, "PRAGMA user_version", version);
  if (rc != SQLITE_OK) step_failed(rc, "cannot read the schema version");
  if (version >= step.version) {
    exec(db, "COMMIT");
    if (version > current) inspect(path, current);  // refuses: a newer loopr got there first
    return;
  }
  const std::string sql(step.sql);
  rc = exec(db, sql.c_str());
  if (rc != SQLITE_OK) step_failed(rc, "the step's SQL failed");

  std::int64_t violations = 0;
  rc = query_int(db, "SELECT count(*) FROM pragma_foreign_key_check", violations);
  if (rc != SQLITE_OK) step_failed(rc, "cannot check foreign keys");
  if (violations != 0) {
    step_failed(SQLITE_OK, std::to_string(violations) + " foreign key violations");
  }
  // PRAGMAs take no bound parameters; both values are this program's own
  // integer constants.
  const std::string stamp =
      "PRAGMA user_version = " + to + "; PRAGMA application_id = " + std::to_string(kApplicationId);
  rc = exec(db, stamp.c_str());
  if (rc != SQLITE_OK) step_failed(rc, "cannot set the schema version");
  rc = exec(db, "COMMIT");
  if (rc != SQLITE_OK) step_failed(rc, "cannot commit");
}

// Who created the database and which loopr opened it last, for whoever must
// one day understand an old file.
void stamp_meta(sqlite3* db, const std::string& path) {
  const Statement created = prepare(db, path,
                                    "INSERT INTO meta (key, value) VALUES "
                                    "('created_at_ms', ?1), ('created_by_version', ?2) "
                                    "ON CONFLICT (key) DO NOTHING");
  const Statement opened = prepare(db, path,
                                   "INSERT INTO meta (key, value) VALUES "
                                   "('last_opened_by_version', ?1) "
                                   "ON CONFLICT (key) DO UPDATE SET value = excluded.value");
  constexpr std::string_view version = LOOPR_VERSION;
  int rc = exec(db, "BEGIN IMMEDIATE");
  if (rc == SQLITE_OK) {
    sqlite3_bind_int64(created.get(), 1, now_unix_ms());
    sqlite3_bind_text(created.get(), 2, version.data(), static_cast<int>(version.size()),
                      SQLITE_STATIC);
    rc = sqlite3_step(created.get());
  }
  if (rc == SQLITE_DONE) {
    sqlite3_bind_text(opened.get(), 1, version.data(), static_cast<int>(version.size()),
                      SQLITE_STATIC);
    rc = sqlite3_step(opened.get());
  }
  if (rc == SQLITE_DONE) rc = exec(db, "COMMIT");
  if (rc != SQLITE_OK) {
    const std::string cause = describe(db, rc);
    exec(db, "ROLLBACK");
    fail("cannot write to the state database '" + path + "': " + cause +
         "; check free space and permissions, or point --state-dir (LOOPR_STATE_DIR) elsewhere");
  }
}

void check_history(std::span<const StoreMigration> migrations) {
  if (migrations.empty()) fail("internal: the store has no schema history");
  for (std::size_t i = 0; i < migrations.size(); ++i) {
    if (migrations[i].version != static_cast<int>(i) + 1) {
      fail("internal: the store's schema history is not numbered 1, 2, ...");
    }
  }
}

bool is_known_status(std::string_view status) {
  return std::find(std::begin(kToolCallStatuses), std::end(kToolCallStatuses), status) !=
         std::end(kToolCallStatuses);
}

}  // namespace

// ---- Store ----------------------------------------------------------------

std::span<const StoreMigration> store_migrations() {
  return kMigrations;
}

Store Store::open(const std::string& state_dir) {
  return open(state_dir, store_migrations());
}

Store Store::open(const std::string& state_dir, std::span<const StoreMigration> migrations) {
  check_history(migrations);
  const int current = migrations.back().version;
  make_state_dir(state_dir);
  auto state = std::make_unique<State>();
  state->path = state_dir;
  if (state->path.back() != '/') state->path += '/';
  state->path += kDatabaseFileName;
  const std::string& path = state->path;

  make_database_file(path, state_dir);
  const int found = inspect(path, current);

  state->db = open_connection(path, SQLITE_OPEN_READWRITE);
  sqlite3* db = state->db.get();
  enter_wal_mode(db, path);
  set_pragma(db, path, "PRAGMA synchronous = NORMAL");
  // A deleted memory note's text is overwritten in the file, not left in
  // free pages (the user asked for it to be gone).
  set_pragma(db, path, "PRAGMA secure_delete = ON");
  set_pragma(db, path, "PRAGMA foreign_keys = OFF");  // for the steps; see kMigrations
  for (const StoreMigration& step : migrations) {
    if (step.version > found) apply_step(db, path, step, current);
  }
  set_pragma(db, path, "PRAGMA foreign_keys = ON");
  stamp_meta(db, path);
  state->schema_version = current;

  state->insert_tool_call = prepare(
      db, path,
      "INSERT INTO tool_calls (call_id, tool, lane, worktree, session, args_digest, status, "
      "exit_code, duration_ms, truncated, error_code, started_at_ms, worker) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)");
  state->select_recent_tool_calls =
      prepare(db, path,
              "SELECT call_id, tool, lane, worktree, session, args_digest, status, exit_code, "
              "duration_ms, truncated, error_code, started_at_ms, worker FROM tool_calls "
              "ORDER BY started_at_ms DESC, id DESC LIMIT ?1");
  state->count_tool_calls = prepare(db, path, "SELECT count(*) FROM tool_calls");
  prepare_loop_statements(*state);
  prepare_note_statements(*state);
  return Store(std::move(state));
}

Store::Store(std::unique_ptr<State> state) : state_(std::move(state)) {}
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;
Store::~Store() = default;

const std::string& Store::path() const {
  return state_->path;
}

int Store::schema_version() const {
  return state_->schema_version;
}

Result<void> Store::record_tool_call(const ToolCallRecord& record) {
  if (!is_known_status(record.status)) {
    return make_error(errc::internal,
                      "store: unknown tool call status '" + record.status.substr(0, 64) + "'");
  }
  // In the INSERT's parameter order: ?1 .. ?7, then error_code (?11).
  const std::pair<const char*, const std::string*> texts[] = {
      {"call_id", &record.call_id}, {"tool", &record.tool},
      {"lane", &record.lane},       {"worktree", &record.worktree},
      {"session", &record.session}, {"args_digest", &record.args_digest},
      {"status", &record.status},   {"error_code", &record.error_code},
      {"worker", &record.worker}};
  for (const auto& [name, text] : texts) {
    if (text->size() > kMaxToolCallFieldBytes) {
      return make_error(errc::too_large, std::string("store: tool call field '") + name + "' is " +
                                             std::to_string(text->size()) +
                                             " bytes; the store keeps at most " +
                                             std::to_string(kMaxToolCallFieldBytes));
    }
  }

  sqlite3* db = state_->db.get();
  const StatementUse use(state_->insert_tool_call);
  sqlite3_stmt* insert = use.get();
  // SQLITE_STATIC: the record outlives the step; StatementUse clears the
  // bindings before it returns.
  auto bind_text = [&](int index, const std::string& text) {
    return sqlite3_bind_text(insert, index, text.data(), static_cast<int>(text.size()),
                             SQLITE_STATIC);
  };
  int rc = SQLITE_OK;
  for (int index = 1; index <= 7 && rc == SQLITE_OK; ++index) {
    rc = bind_text(index, *texts[index - 1].second);
  }
  if (rc == SQLITE_OK) {
    rc = record.exit_code ? sqlite3_bind_int(insert, 8, *record.exit_code)
                          : sqlite3_bind_null(insert, 8);
  }
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(insert, 9, record.duration_ms);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int(insert, 10, record.truncated ? 1 : 0);
  if (rc == SQLITE_OK) {
    rc = record.error_code.empty() ? sqlite3_bind_null(insert, 11)
                                   : bind_text(11, record.error_code);
  }
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(insert, 12, record.started_at_ms);
  if (rc == SQLITE_OK) rc = bind_text(13, record.worker.empty() ? kLocalWorker : record.worker);
  if (rc != SQLITE_OK) return store_error(db, rc, "binding a tool call record");

  rc = sqlite3_step(insert);
  if (rc != SQLITE_DONE) return store_error(db, rc, "recording a tool call");
  return {};
}

Result<std::vector<ToolCallRecord>> Store::recent_tool_calls(std::size_t limit) const {
  sqlite3* db = state_->db.get();
  const StatementUse use(state_->select_recent_tool_calls);
  sqlite3_stmt* select = use.get();
  const auto rows = static_cast<sqlite3_int64>(std::min(limit, kMaxRecentToolCalls));
  int rc = sqlite3_bind_int64(select, 1, rows);
  if (rc != SQLITE_OK) return store_error(db, rc, "binding the row limit");

  std::vector<ToolCallRecord> records;
  while ((rc = sqlite3_step(select)) == SQLITE_ROW) {
    ToolCallRecord record;
    record.call_id = column_string(select, 0);
    record.tool = column_string(select, 1);
    record.lane = column_string(select, 2);
    record.worktree = column_string(select, 3);
    record.session = column_string(select, 4);
    record.args_digest = column_string(select, 5);
    record.status = column_string(select, 6);
    if (sqlite3_column_type(select, 7) != SQLITE_NULL) {
      const std::int64_t exit_code = sqlite3_column_int64(select, 7);
      if (exit_code < std::numeric_limits<std::int32_t>::min() ||
          exit_code > std::numeric_limits<std::int32_t>::max()) {
        return make_error(errc::internal,
                          "store: tool call '" + record.call_id + "' has exit code " +
                              std::to_string(exit_code) + ", outside the 32-bit range",
                          "the state database was edited by hand; fix or delete that row");
      }
      record.exit_code = static_cast<std::int32_t>(exit_code);
    }
    record.duration_ms = sqlite3_column_int64(select, 8);
    record.truncated = sqlite3_column_int64(select, 9) != 0;
    record.error_code = column_string(select, 10);
    record.started_at_ms = sqlite3_column_int64(select, 11);
    record.worker = column_string(select, 12);
    records.push_back(std::move(record));
  }
  if (rc != SQLITE_DONE) return store_error(db, rc, "reading recent tool calls");
  return records;
}

Result<std::int64_t> Store::count_tool_calls() const {
  sqlite3* db = state_->db.get();
  const StatementUse use(state_->count_tool_calls);
  const int rc = sqlite3_step(use.get());
  if (rc != SQLITE_ROW) return store_error(db, rc, "counting tool calls");
  return static_cast<std::int64_t>(sqlite3_column_int64(use.get(), 0));
}

// ---- args_digest ------------------------------------------------------------

std::string args_digest(const nlohmann::json& args) {
  return sha256_digest(args.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

std::string sha256_digest(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  // EVP_Digest fails only when it cannot allocate its context.
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr) != 1) {
    throw std::bad_alloc();
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "sha256:";
  out.reserve(out.size() + 2 * length);
  for (unsigned int i = 0; i < length; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 0xF];
  }
  return out;
}

}  // namespace loopr::store
