#include "store/store.hpp"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/unique_fd.hpp"
#include "tests/support/temp_tree.hpp"

namespace loopr::store {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr std::int64_t kLooprApplicationId = 0x6c6f6f70;  // "loop"

int current_version() {
  return store_migrations().back().version;
}

// A plain SQLite connection, for building and inspecting files beside the Store.
class RawDb {
 public:
  explicit RawDb(const std::string& path) {
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) ADD_FAILURE() << sqlite3_errmsg(db_);
  }
  ~RawDb() { sqlite3_close(db_); }
  RawDb(const RawDb&) = delete;
  RawDb& operator=(const RawDb&) = delete;

  void exec(const std::string& sql) {
    char* message = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
      ADD_FAILURE() << sql << ": " << (message ? message : "?");
    }
    sqlite3_free(message);
  }
  std::string text(const std::string& sql) {
    sqlite3_stmt* statement = nullptr;
    std::string out = "<no row>";
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &statement, nullptr) != SQLITE_OK) {
      ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db_);
    } else if (sqlite3_step(statement) == SQLITE_ROW) {
      const auto* value = reinterpret_cast<const char*>(sqlite3_column_text(statement, 0));
      out = value ? value : "<null>";
    }
    sqlite3_finalize(statement);
    return out;
  }
  std::int64_t integer(const std::string& sql) { return std::stoll(text(sql)); }

 private:
  sqlite3* db_ = nullptr;
};

ToolCallRecord sample_record(std::string call_id, std::int64_t started_at_ms) {
  ToolCallRecord record;
  record.call_id = std::move(call_id);
  record.tool = "read_file";
  record.lane = "no-net";
  record.worktree = "/home/ada/src/project";
  record.session = "session-7";
  record.args_digest = args_digest({{"path", "README.md"}});
  record.status = "success";
  record.exit_code = 0;
  record.duration_ms = 3;
  record.truncated = false;
  record.started_at_ms = started_at_ms;
  return record;
}

std::string startup_error_of(const std::string& state_dir) {
  try {
    Store::open(state_dir);
  } catch (const StartupError& error) {
    return error.what();
  }
  return "<opened>";
}

class StoreTest : public ::testing::Test {
 protected:
  std::string state_dir() const { return tree_.path("state"); }
  std::string db_path() const { return tree_.path("state/loopr.db"); }
  std::string db_bytes() const { return tree_.read("state/loopr.db"); }

  test::TempTree tree_;
};

TEST_F(StoreTest, OpenCreatesPrivateDirectoriesAndAWalDatabase) {
  const std::string nested = tree_.path("xdg/state/loopr");
  const Store store = Store::open(nested);
  EXPECT_EQ(store.path(), nested + "/loopr.db");
  EXPECT_EQ(store.schema_version(), current_version());

  for (const char* dir : {"xdg", "xdg/state", "xdg/state/loopr"}) {
    EXPECT_EQ(fs::status(tree_.path(dir)).permissions(), fs::perms::owner_all) << dir;
  }
  EXPECT_EQ(fs::status(store.path()).permissions(), fs::perms::owner_read | fs::perms::owner_write);

  RawDb raw(store.path());
  EXPECT_EQ(raw.text("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(raw.integer("PRAGMA user_version"), current_version());
  EXPECT_EQ(raw.integer("PRAGMA application_id"), kLooprApplicationId);
  const std::string created_by =
      raw.text("SELECT value FROM meta WHERE key = 'created_by_version'");
  EXPECT_NE(created_by.find('.'), std::string::npos) << created_by;  // e.g. "0.1.0"
  EXPECT_EQ(raw.text("SELECT value FROM meta WHERE key = 'last_opened_by_version'"), created_by);
  EXPECT_GT(raw.integer("SELECT value FROM meta WHERE key = 'created_at_ms'"), 0);
  EXPECT_EQ(raw.text("SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND "
                     "tbl_name = 'tool_calls' AND sql LIKE '%(started_at_ms)%'"),
            "1");
  EXPECT_EQ(raw.text("SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND "
                     "tbl_name = 'tool_calls' AND sql LIKE '%(tool)%'"),
            "1");
}

TEST_F(StoreTest, DatabaseFilesAreCloseOnExec) {
  Store store = Store::open(state_dir());
  ASSERT_TRUE(store.record_tool_call(sample_record("c1", 1)).ok());  // opens -wal and -shm

  int database_fds = 0;
  for (const auto& entry : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ignored;
    const std::string target = fs::read_symlink(entry.path(), ignored).string();
    if (target.rfind(db_path(), 0) != 0) continue;
    ++database_fds;
    const int fd = std::stoi(entry.path().filename().string());
    EXPECT_NE(::fcntl(fd, F_GETFD) & FD_CLOEXEC, 0) << target;
  }
  EXPECT_GE(database_fds, 3);  // loopr.db, loopr.db-wal, loopr.db-shm
}

TEST_F(StoreTest, RecordsRoundTripEveryField) {
  Store store = Store::open(state_dir());
  ToolCallRecord full = sample_record("call-1", 1'700'000'000'000);
  full.tool = "run_command";
  full.lane = "net";
  full.status = "failed";
  full.exit_code = -9;
  full.duration_ms = 120'000;
  full.truncated = true;
  full.error_code = "timeout";

  ToolCallRecord sparse = sample_record("call-2", 1'700'000'000'001);
  sparse.status = "denied";
  sparse.exit_code.reset();
  sparse.error_code.clear();
  sparse.session.clear();

  ASSERT_TRUE(store.record_tool_call(full).ok());
  ASSERT_TRUE(store.record_tool_call(sparse).ok());

  const auto recent = store.recent_tool_calls(10);
  ASSERT_TRUE(recent.ok()) << recent.error().message;
  ASSERT_EQ(recent->size(), 2u);
  EXPECT_EQ((*recent)[0], sparse);
  EXPECT_EQ((*recent)[1], full);
  EXPECT_FALSE((*recent)[0].exit_code.has_value());
  EXPECT_EQ(*store.count_tool_calls(), 2);

  RawDb raw(db_path());
  EXPECT_EQ(raw.text("SELECT error_code FROM tool_calls WHERE call_id = 'call-2'"), "<null>");
  EXPECT_EQ(raw.text("SELECT exit_code FROM tool_calls WHERE call_id = 'call-2'"), "<null>");
}

TEST_F(StoreTest, RecentCallsAreNewestFirstAndLimited) {
  Store store = Store::open(state_dir());
  // Out of order, with a tie at 300 broken by insertion order.
  for (const auto& [id, at] : std::vector<std::pair<std::string, std::int64_t>>{
           {"a", 200}, {"b", 100}, {"c", 300}, {"d", 300}, {"e", 50}}) {
    ASSERT_TRUE(store.record_tool_call(sample_record(id, at)).ok());
  }
  auto ids = [&](std::size_t limit) {
    const auto recent = store.recent_tool_calls(limit);
    std::vector<std::string> out;
    for (const auto& record : recent.value())
      out.push_back(record.call_id);
    return out;
  };
  EXPECT_EQ(ids(10), (std::vector<std::string>{"d", "c", "a", "b", "e"}));
  EXPECT_EQ(ids(2), (std::vector<std::string>{"d", "c"}));
  EXPECT_TRUE(ids(0).empty());
}

TEST_F(StoreTest, RecentCallsAreCappedWhateverTheLimit) {
  Store store = Store::open(state_dir());
  for (std::size_t i = 0; i <= kMaxRecentToolCalls; ++i) {
    ASSERT_TRUE(store.record_tool_call(sample_record("c", static_cast<std::int64_t>(i))).ok());
  }
  const auto recent = store.recent_tool_calls(std::numeric_limits<std::size_t>::max());
  ASSERT_TRUE(recent.ok());
  EXPECT_EQ(recent->size(), kMaxRecentToolCalls);
  EXPECT_EQ(*store.count_tool_calls(), static_cast<std::int64_t>(kMaxRecentToolCalls) + 1);
}

TEST_F(StoreTest, ReopenKeepsTheData) {
  const ToolCallRecord record = sample_record("kept", 42);
  {
    Store store = Store::open(state_dir());
    ASSERT_TRUE(store.record_tool_call(record).ok());
  }
  const Store reopened = Store::open(state_dir());
  EXPECT_EQ(*reopened.count_tool_calls(), 1);
  EXPECT_EQ(reopened.recent_tool_calls(1).value().at(0), record);
}

TEST_F(StoreTest, EmptyVersionZeroFilesAreMigratedToCurrent) {
  tree_.write("zero-bytes/loopr.db", "");
  tree_.mkdir("no-tables");
  {
    RawDb raw(tree_.path("no-tables/loopr.db"));
    raw.exec("CREATE TABLE scratch (x); DROP TABLE scratch;");  // a real, empty database
  }
  for (const char* dir : {"zero-bytes", "no-tables"}) {
    Store store = Store::open(tree_.path(dir));
    EXPECT_EQ(store.schema_version(), current_version()) << dir;
    ASSERT_TRUE(store.record_tool_call(sample_record("x", 1)).ok()) << dir;
    RawDb raw(store.path());
    EXPECT_EQ(raw.integer("PRAGMA user_version"), current_version()) << dir;
    EXPECT_EQ(raw.text("PRAGMA journal_mode"), "wal") << dir;
  }
}

// Schema version 1 exactly as the first release wrote it. Kept frozen here:
// if this test breaks, a released migration step was edited.
TEST_F(StoreTest, AVersionOneDatabaseOpensWithItsRows) {
  {
    tree_.mkdir("state");
    RawDb raw(db_path());
    raw.exec(R"sql(
      PRAGMA journal_mode = WAL;
      BEGIN;
      CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value ANY NOT NULL) STRICT;
      CREATE TABLE tool_calls (
        id INTEGER PRIMARY KEY, call_id TEXT NOT NULL, tool TEXT NOT NULL, lane TEXT NOT NULL,
        worktree TEXT NOT NULL, session TEXT NOT NULL, args_digest TEXT NOT NULL,
        status TEXT NOT NULL, exit_code INTEGER, duration_ms INTEGER NOT NULL,
        truncated INTEGER NOT NULL CHECK (truncated IN (0, 1)), error_code TEXT,
        started_at_ms INTEGER NOT NULL) STRICT;
      CREATE INDEX tool_calls_by_started_at ON tool_calls (started_at_ms);
      CREATE INDEX tool_calls_by_tool ON tool_calls (tool);
      INSERT INTO meta VALUES ('created_at_ms', 1700000000000), ('created_by_version', '0.0.1-frozen');
      INSERT INTO tool_calls (call_id, tool, lane, worktree, session, args_digest, status,
                              exit_code, duration_ms, truncated, error_code, started_at_ms)
        VALUES ('old-1', 'grep', 'no-net', '/w', 's', 'sha256:00', 'timeout', NULL, 60000, 1,
                'timeout', 1700000000000);
      PRAGMA user_version = 1;
      PRAGMA application_id = 1819242352;
      COMMIT;
    )sql");
  }
  const Store store = Store::open(state_dir());
  EXPECT_EQ(store.schema_version(), current_version());
  const auto recent = store.recent_tool_calls(5);
  ASSERT_TRUE(recent.ok()) << recent.error().message;
  ASSERT_EQ(recent->size(), 1u);
  const ToolCallRecord& old = recent->at(0);
  EXPECT_EQ(old.call_id, "old-1");
  EXPECT_EQ(old.tool, "grep");
  EXPECT_EQ(old.status, "timeout");
  EXPECT_FALSE(old.exit_code.has_value());
  EXPECT_EQ(old.duration_ms, 60000);
  EXPECT_TRUE(old.truncated);
  EXPECT_EQ(old.error_code, "timeout");
  EXPECT_EQ(old.started_at_ms, 1'700'000'000'000);

  RawDb raw(db_path());
  EXPECT_EQ(raw.text("SELECT value FROM meta WHERE key = 'created_by_version'"), "0.0.1-frozen");
  EXPECT_NE(raw.text("SELECT value FROM meta WHERE key = 'last_opened_by_version'"), "<no row>");
}

// A version 2 database (loops and their journal, no memory tables) upgrades
// to version 3 with the model turns already in it indexed for searches.
TEST_F(StoreTest, AVersionTwoDatabaseGetsItsModelTurnsIndexed) {
  {
    tree_.mkdir("state");
    RawDb raw(db_path());
    std::string sql = "PRAGMA journal_mode = WAL; BEGIN;";
    for (const StoreMigration& step : store_migrations())
      if (step.version <= 2) sql += std::string(step.sql);
    sql += R"sql(
      INSERT INTO loops VALUES ('l-old', 1, 'code', NULL, 'completed', '{"repo":"/src/app"}',
                                '{}', 1, 2);
      INSERT INTO loop_steps (loop_id, iteration, kind, data, at_ms) VALUES
        ('l-old', 1, 'model_turn', '{"sequence":0,"turn":{"text":"The mutex in pool.c deadlocks"}}', 5),
        ('l-old', 1, 'model_turn', '{"sequence":1,"turn":{"text":""}}', 6),
        ('l-old', 1, 'note', '{"text":"deadlocks in a note are not conversation"}', 7);
      PRAGMA user_version = 2;
      PRAGMA application_id = 1819242352;
      COMMIT;
    )sql";
    raw.exec(sql);
  }
  Store store = Store::open(state_dir());
  EXPECT_EQ(store.schema_version(), current_version());
  auto hits = store.search_conversation("/src/app", "\"deadlocks\"", 10);
  ASSERT_TRUE(hits.ok()) << hits.error().message;
  ASSERT_EQ(hits->size(), 1u);
  EXPECT_EQ(hits->at(0).loop_id, "l-old");
  EXPECT_EQ(hits->at(0).text, "The mutex in pool.c deadlocks");
  EXPECT_EQ(hits->at(0).snippet, "The mutex in pool.c **deadlocks**");
  EXPECT_TRUE(store.search_conversation("/src/other", "\"deadlocks\"", 10)->empty());
  // A loop the user deleted is no longer searched.
  LoopRow row = **store.find_loop("l-old");
  row.state = {{"deleted", true}};
  ASSERT_TRUE(store.update_loop(row).ok());
  EXPECT_TRUE(store.search_conversation("/src/app", "\"deadlocks\"", 10)->empty());
}

// The notes' search index changes with the note in one transaction: after
// an update the old words are gone from the index itself, after a delete
// nothing of the note is left in it (a ghost row would be hidden by the
// search's join, so the index is read directly).
TEST_F(StoreTest, ANoteAndItsIndexEntryChangeTogether) {
  {
    Store store = Store::open(state_dir());
    MemoryNote note;
    note.note_id = "note-a";
    note.owner_uid = 1000;
    note.repo = "/src/app";
    note.content = "aardvark burrows";
    note.tags = {"zoology"};
    note.source = "client";
    ASSERT_TRUE(store.insert_note(note).ok());
    ASSERT_TRUE(*store.update_note(1000, "note-a", "badger setts", std::nullopt, 2));
    RawDb raw(db_path());
    EXPECT_EQ(raw.integer("SELECT count(*) FROM memory_fts WHERE memory_fts MATCH 'aardvark'"), 0);
    EXPECT_EQ(raw.integer("SELECT count(*) FROM memory_fts WHERE memory_fts MATCH 'badger'"), 1);
    EXPECT_EQ(raw.integer("SELECT count(*) FROM memory_fts WHERE memory_fts MATCH 'zoology'"), 1);
    EXPECT_FALSE(*store.update_note(1001, "note-a", "not mine", std::nullopt, 3));
    EXPECT_FALSE(*store.delete_note(1001, "note-a"));
    ASSERT_TRUE(*store.delete_note(1000, "note-a"));
  }
  RawDb raw(db_path());
  EXPECT_EQ(raw.integer("SELECT count(*) FROM memory_fts"), 0);
  EXPECT_EQ(raw.integer("SELECT count(*) FROM memory_notes"), 0);
}

// A history one step longer than this build's, as a future loopr will have.
std::vector<StoreMigration> history_with(std::string_view next_step_sql) {
  std::vector<StoreMigration> history(store_migrations().begin(), store_migrations().end());
  history.push_back({current_version() + 1, "test step", next_step_sql});
  return history;
}

TEST_F(StoreTest, AnUpgradeStepRunsOnceAndKeepsTheRows) {
  const ToolCallRecord record = sample_record("before-upgrade", 7);
  {
    Store store = Store::open(state_dir());
    ASSERT_TRUE(store.record_tool_call(record).ok());
  }
  const auto next = history_with(R"sql(
    CREATE TABLE future_things (id TEXT PRIMARY KEY NOT NULL) STRICT;
    ALTER TABLE tool_calls ADD COLUMN future_id TEXT REFERENCES future_things (id);
  )sql");
  for (int open = 0; open < 2; ++open) {  // the second open must not run the step again
    Store store = Store::open(state_dir(), next);
    EXPECT_EQ(store.schema_version(), current_version() + 1);
    EXPECT_EQ(store.recent_tool_calls(5).value(), std::vector<ToolCallRecord>{record});
  }
  RawDb raw(db_path());
  EXPECT_EQ(raw.integer("PRAGMA user_version"), current_version() + 1);
  EXPECT_EQ(raw.text("SELECT count(*) FROM pragma_table_info('tool_calls') "
                     "WHERE name = 'future_id'"),
            "1");
}

TEST_F(StoreTest, AFailedUpgradeStepLeavesThePreviousVersion) {
  {
    Store store = Store::open(state_dir());
    ASSERT_TRUE(store.record_tool_call(sample_record("kept", 1)).ok());
  }
  const auto broken = history_with(
      "CREATE TABLE future_things (id TEXT PRIMARY KEY NOT NULL) STRICT;"
      "INSERT INTO no_such_table VALUES (1);");
  try {
    Store::open(state_dir(), broken);
    FAIL() << "the broken step was accepted";
  } catch (const StartupError& error) {
    const std::string from = std::to_string(current_version());
    EXPECT_THAT(error.what(), HasSubstr("from schema version " + from + " to " +
                                        std::to_string(current_version() + 1)));
    EXPECT_THAT(error.what(), HasSubstr("no_such_table"));
    EXPECT_THAT(error.what(), HasSubstr("left at version " + from));
  }
  {
    RawDb raw(db_path());
    EXPECT_EQ(raw.integer("PRAGMA user_version"), current_version());
    EXPECT_EQ(raw.text("SELECT count(*) FROM sqlite_schema WHERE name = 'future_things'"), "0");
  }
  const Store store = Store::open(state_dir());
  EXPECT_EQ(*store.count_tool_calls(), 1);
}

TEST_F(StoreTest, ANewerSchemaIsRefusedAndTheFileLeftUnchanged) {
  {
    Store store =
        Store::open(state_dir(), history_with("CREATE TABLE future_things (id TEXT) STRICT;"));
    ASSERT_TRUE(store.record_tool_call(sample_record("from-the-future", 1)).ok());
  }
  const std::string before = db_bytes();
  ASSERT_FALSE(before.empty());

  const std::string message = startup_error_of(state_dir());
  EXPECT_THAT(message, HasSubstr("schema version " + std::to_string(current_version() + 1)));
  EXPECT_THAT(message, HasSubstr("written by a newer loopr"));
  EXPECT_THAT(message, HasSubstr("upgrade loopr or point --state-dir"));
  EXPECT_EQ(db_bytes(), before);
}

TEST_F(StoreTest, AFileThatIsNotADatabaseIsRefusedAndNotOverwritten) {
  std::string garbage(8192, '\0');
  for (std::size_t i = 0; i < garbage.size(); ++i) {
    garbage[i] = static_cast<char>((i * 2654435761u) >> 13);
  }
  tree_.write("state/loopr.db", garbage);

  const std::string message = startup_error_of(state_dir());
  EXPECT_THAT(message, HasSubstr("'" + db_path() + "' is not an SQLite database"));
  EXPECT_THAT(message, HasSubstr("did not change the file"));
  EXPECT_EQ(db_bytes(), garbage);
}

TEST_F(StoreTest, AnotherProgramsDatabaseIsRefusedAndNotTouched) {
  {
    tree_.mkdir("state");
    RawDb raw(db_path());
    raw.exec("CREATE TABLE users (name TEXT); INSERT INTO users VALUES ('ada');");
  }
  const std::string before = db_bytes();
  const std::string message = startup_error_of(state_dir());
  EXPECT_THAT(message, HasSubstr("an SQLite database that loopr did not write"));
  EXPECT_EQ(db_bytes(), before);
}

TEST_F(StoreTest, ACorruptDatabaseIsRefusedAndNotTouched) {
  {
    Store store = Store::open(state_dir());
    for (int i = 0; i < 500; ++i) {
      ASSERT_TRUE(store.record_tool_call(sample_record("c" + std::to_string(i), i)).ok());
    }
  }
  std::string bytes = db_bytes();
  const std::size_t page_size = 4096;
  ASSERT_GT(bytes.size(), 4 * page_size);
  // Keep page 1 (header and schema) intact; scramble the table and index pages.
  for (std::size_t i = page_size; i < bytes.size(); ++i) {
    bytes[i] = static_cast<char>(i * 7 + 3);
  }
  tree_.write("state/loopr.db", bytes);

  const std::string message = startup_error_of(state_dir());
  EXPECT_THAT(message, HasSubstr("is corrupt"));
  EXPECT_THAT(message, HasSubstr(".recover"));
  EXPECT_EQ(db_bytes(), bytes);
}

// Runs Store::open(state_dir) as an unprivileged user and returns its
// StartupError message: in a child that drops to nobody when we are root
// (root writes anywhere), in-process otherwise.
std::string startup_error_as_unprivileged(const std::string& state_dir) {
  if (::geteuid() != 0) return startup_error_of(state_dir);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return "<pipe failed>";
  UniqueFd read_end(fds[0]);
  UniqueFd write_end(fds[1]);
  std::fflush(nullptr);  // the child must not repeat buffered output
  const pid_t child = ::fork();
  if (child == 0) {
    constexpr uid_t kNobody = 65534;
    if (::setgroups(0, nullptr) != 0 || ::setgid(kNobody) != 0 || ::setuid(kNobody) != 0) {
      ::_exit(2);
    }
    const std::string message = startup_error_of(state_dir);
    const ssize_t ignored = ::write(write_end.get(), message.data(), message.size());
    static_cast<void>(ignored);
    ::_exit(0);
  }
  write_end.reset();
  std::string message;
  char buffer[1024];
  ssize_t got = 0;
  while ((got = ::read(read_end.get(), buffer, sizeof buffer)) > 0) {
    message.append(buffer, static_cast<std::size_t>(got));
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "<child could not drop to nobody>";
  return message;
}

TEST_F(StoreTest, AnUnwritableStateDirectoryIsAClearStartupError) {
  const auto read_only = fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                         fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec;
  fs::permissions(tree_.root(), read_only);  // nobody may traverse it, and not write
  tree_.mkdir("locked/state");
  fs::permissions(tree_.path("locked"), read_only);
  fs::permissions(tree_.path("locked/state"), read_only);

  const std::string existing = startup_error_as_unprivileged(tree_.path("locked/state"));
  EXPECT_THAT(existing, HasSubstr("cannot open the state database '" +
                                  tree_.path("locked/state/loopr.db") + "' for writing"));
  EXPECT_THAT(existing, HasSubstr("Permission denied"));
  EXPECT_THAT(existing, HasSubstr("--state-dir"));

  const std::string missing = startup_error_as_unprivileged(tree_.path("locked/new/state"));
  EXPECT_THAT(missing, HasSubstr("cannot create the state directory '" +
                                 tree_.path("locked/new/state") + "'"));
  EXPECT_THAT(missing, HasSubstr("Permission denied"));
  EXPECT_FALSE(tree_.exists("locked/state/loopr.db"));
}

TEST_F(StoreTest, AStateDirectoryThatIsAFileIsAClearStartupError) {
  tree_.write("state", "not a directory");
  EXPECT_THAT(startup_error_of(state_dir()), HasSubstr("'" + state_dir() + "' is not a directory"));
  EXPECT_EQ(tree_.read("state"), "not a directory");
}

TEST_F(StoreTest, SqlLookingTextIsStoredVerbatim) {
  Store store = Store::open(state_dir());
  ToolCallRecord record = sample_record("x'); DROP TABLE tool_calls; --", 1);
  record.tool = "\"; DELETE FROM meta; --";
  record.lane = "?1 ?2 :name @x $y";
  record.worktree = std::string("/tmp/with\0nul/and 'quotes'", 26);
  record.session = "%s%n%x \\ \n\t";
  record.error_code = "' OR 1=1 --";
  ASSERT_TRUE(store.record_tool_call(record).ok());

  EXPECT_EQ(store.recent_tool_calls(1).value(), std::vector<ToolCallRecord>{record});
  RawDb raw(db_path());
  EXPECT_EQ(raw.integer("SELECT count(*) FROM meta"), 3);
  EXPECT_EQ(raw.integer("SELECT count(*) FROM tool_calls"), 1);
}

TEST_F(StoreTest, RefusesUnknownStatusesAndOversizedFields) {
  Store store = Store::open(state_dir());
  ToolCallRecord unknown = sample_record("u", 1);
  unknown.status = "succeeded";
  const auto refused_status = store.record_tool_call(unknown);
  ASSERT_FALSE(refused_status.ok());
  EXPECT_EQ(refused_status.error().code, errc::internal);
  EXPECT_THAT(refused_status.error().message, HasSubstr("'succeeded'"));

  ToolCallRecord huge = sample_record("h", 1);
  huge.session.assign(kMaxToolCallFieldBytes + 1, 's');
  const auto refused_size = store.record_tool_call(huge);
  ASSERT_FALSE(refused_size.ok());
  EXPECT_EQ(refused_size.error().code, errc::too_large);
  EXPECT_THAT(refused_size.error().message, HasSubstr("'session'"));

  huge.session.resize(kMaxToolCallFieldBytes);
  EXPECT_TRUE(store.record_tool_call(huge).ok());
  EXPECT_EQ(*store.count_tool_calls(), 1);
}

TEST_F(StoreTest, EveryDocumentedStatusIsAccepted) {
  Store store = Store::open(state_dir());
  for (const std::string_view status : kToolCallStatuses) {
    ToolCallRecord record = sample_record(std::string(status), 1);
    record.status = std::string(status);
    EXPECT_TRUE(store.record_tool_call(record).ok()) << status;
  }
  EXPECT_EQ(*store.count_tool_calls(), static_cast<std::int64_t>(std::size(kToolCallStatuses)));
}

TEST(ArgsDigest, IsTheSha256OfTheCompactDump) {
  EXPECT_EQ(args_digest(nlohmann::json::object()),
            "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a");
}

TEST(ArgsDigest, IsStableAcrossKeyOrderAndSeesValues) {
  const auto one = nlohmann::json::parse(R"({"b": 1, "a": {"y": [1, 2], "x": "é"}})");
  const auto two = nlohmann::json::parse(R"({"a": {"x": "é", "y": [1, 2]}, "b": 1})");
  EXPECT_EQ(args_digest(one), args_digest(two));
  EXPECT_NE(args_digest(one), args_digest(nlohmann::json::parse(R"({"a": {"x": "é", "y": [2, 1]},
                                                                    "b": 1})")));
  EXPECT_EQ(args_digest(one).size(), std::string("sha256:").size() + 64);
}

TEST_F(StoreTest, RepositoryTrustIsKeptReplacedAndForgotten) {
  {
    Store store = Store::open(state_dir());
    EXPECT_FALSE(store.find_repo_trust("/src/app").value());
    ASSERT_TRUE(store.put_repo_trust({"/src/app", "sha256:aa", 1}).ok());
    ASSERT_TRUE(store.put_repo_trust({"/src/lib", "sha256:bb", 2}).ok());
    ASSERT_TRUE(store.put_repo_trust({"/src/app", "sha256:cc", 3}).ok());  // trusted again
  }
  Store store = Store::open(state_dir());
  EXPECT_EQ(store.find_repo_trust("/src/app").value(), (RepoTrust{"/src/app", "sha256:cc", 3}));
  EXPECT_EQ(store.all_repo_trust().value(),
            (std::vector<RepoTrust>{{"/src/app", "sha256:cc", 3}, {"/src/lib", "sha256:bb", 2}}));
  EXPECT_TRUE(store.delete_repo_trust("/src/app").value());
  EXPECT_FALSE(store.delete_repo_trust("/src/app").value());
  EXPECT_FALSE(store.find_repo_trust("/src/app").value());
  EXPECT_EQ(store.all_repo_trust().value().size(), 1u);
}

}  // namespace
}  // namespace loopr::store
