// Internal to store/: the RAII layer over libsqlite3 and the Store's private
// state, shared by the files that implement Store (store.cpp: opening and
// migrations, tool calls; loop_records.cpp: loops and their journal).
// Threads: like Store, one thread.
#pragma once

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "store/store.hpp"

namespace loopr::store::detail {

// ---- A small RAII layer over libsqlite3 -------------------------------------

struct ConnectionCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using Connection = std::unique_ptr<sqlite3, ConnectionCloser>;

struct StatementFinalizer {
  void operator()(sqlite3_stmt* statement) const { sqlite3_finalize(statement); }
};
using Statement = std::unique_ptr<sqlite3_stmt, StatementFinalizer>;

// One use of a cached statement: on scope exit it is reset and its bindings
// cleared, whatever path left the scope, so the next use starts clean.
class StatementUse {
 public:
  explicit StatementUse(const Statement& statement) : statement_(statement.get()) {}
  StatementUse(const StatementUse&) = delete;
  StatementUse& operator=(const StatementUse&) = delete;
  ~StatementUse() {
    sqlite3_reset(statement_);
    sqlite3_clear_bindings(statement_);
  }
  sqlite3_stmt* get() const { return statement_; }

 private:
  sqlite3_stmt* statement_;
};

// "<errmsg> (<error name>)", e.g. "database or disk is full (SQLITE_FULL)".
inline std::string describe(sqlite3* db, int rc) {
  std::string text = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  text += " (sqlite error ";
  text += std::to_string(rc);
  text += ")";
  return text;
}

inline int exec(sqlite3* db, const char* sql) {
  return sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
}

// Runs a statement that yields one integer (a PRAGMA or a count).
inline int query_int(sqlite3* db, const char* sql, std::int64_t& out) {
  sqlite3_stmt* raw = nullptr;
  int rc = sqlite3_prepare_v2(db, sql, -1, &raw, nullptr);
  Statement statement(raw);
  if (rc != SQLITE_OK) return rc;
  rc = sqlite3_step(raw);
  if (rc != SQLITE_ROW) return rc == SQLITE_DONE ? SQLITE_ERROR : rc;
  out = sqlite3_column_int64(raw, 0);
  return SQLITE_OK;
}

// Runs a statement that yields one text value (journal_mode, quick_check).
inline int query_text(sqlite3* db, const char* sql, std::string& out) {
  sqlite3_stmt* raw = nullptr;
  int rc = sqlite3_prepare_v2(db, sql, -1, &raw, nullptr);
  Statement statement(raw);
  if (rc != SQLITE_OK) return rc;
  rc = sqlite3_step(raw);
  if (rc != SQLITE_ROW) return rc == SQLITE_DONE ? SQLITE_ERROR : rc;
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(raw, 0));
  out = text != nullptr ? text : "";
  return SQLITE_OK;
}

inline std::string column_string(sqlite3_stmt* statement, int column) {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(statement, column));
  if (text == nullptr) return {};
  return std::string(text, static_cast<std::size_t>(sqlite3_column_bytes(statement, column)));
}

inline std::int64_t now_unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

inline int bind_text(sqlite3_stmt* statement, int index, const std::string& text) {
  return sqlite3_bind_text(statement, index, text.data(), static_cast<int>(text.size()),
                           SQLITE_TRANSIENT);
}

// BEGIN IMMEDIATE ... COMMIT, rolled back unless commit() succeeded.
class Transaction {
 public:
  explicit Transaction(sqlite3* db) : db_(db), rc_(exec(db, "BEGIN IMMEDIATE")) {}
  ~Transaction() {
    if (rc_ == SQLITE_OK && !committed_) exec(db_, "ROLLBACK");
  }
  int begun() const { return rc_; }
  int commit() {
    const int rc = exec(db_, "COMMIT");
    committed_ = rc == SQLITE_OK;
    return rc;
  }

 private:
  sqlite3* db_;
  int rc_;
  bool committed_ = false;
};

// ---- Run-time errors ------------------------------------------------------

inline Error store_error(sqlite3* db, int rc, std::string_view operation) {
  std::string hint;
  switch (rc & 0xff) {
    case SQLITE_FULL:
      hint = "the disk holding the state directory is full; free space there";
      break;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      hint =
          "another process holds a lock on the state database; is a second looprd using "
          "the same state directory?";
      break;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      hint = "the state database is damaged; stop looprd and move loopr.db aside";
      break;
    case SQLITE_READONLY:
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
      hint = "check the state directory's file system and permissions";
      break;
    default:
      break;
  }
  return make_error(errc::io, "store: " + std::string(operation) + ": " + describe(db, rc),
                    std::move(hint));
}

// A statement prepared to be kept (SQLITE_PREPARE_PERSISTENT). Runs while
// the Store opens: a failure is a StartupError saying the file does not have
// the schema this build expects, and that it was left unchanged.
inline Statement prepare(sqlite3* db, const std::string& path, const char* sql) {
  sqlite3_stmt* raw = nullptr;
  const int rc = sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &raw, nullptr);
  Statement statement(raw);
  if (rc != SQLITE_OK) {
    throw StartupError("the state database '" + path + "' does not have the expected schema (" +
                       describe(db, rc) +
                       "). loopr did not change the file; move it aside or point --state-dir "
                       "(LOOPR_STATE_DIR) elsewhere.");
  }
  return statement;
}

// A statement made for one call (rare operations, or SQL that varies).
inline Result<Statement> prepare_once(sqlite3* db, const std::string& sql,
                                      std::string_view operation) {
  sqlite3_stmt* raw = nullptr;
  const int rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &raw, nullptr);
  Statement statement(raw);
  if (rc != SQLITE_OK) return store_error(db, rc, operation);
  return statement;
}

}  // namespace loopr::store::detail

namespace loopr::store {

struct Store::State {
  std::string path;
  int schema_version = 0;
  detail::Connection db;  // declared before the statements: destroyed after them
  detail::Statement insert_tool_call;
  detail::Statement select_recent_tool_calls;
  detail::Statement count_tool_calls;
  // loop_records.cpp
  detail::Statement insert_loop;
  detail::Statement update_loop;
  detail::Statement select_loops;
  detail::Statement select_loop;
  detail::Statement insert_loop_step;
  detail::Statement select_loop_steps;
  detail::Statement count_loop_steps;
  detail::Statement insert_conversation_text;
  // memory_notes.cpp
  detail::Statement insert_note;
  detail::Statement update_note;
  detail::Statement update_note_tags;
  detail::Statement delete_note;
  detail::Statement select_note;
  detail::Statement select_note_row;
  detail::Statement count_notes;
  detail::Statement index_note;
  detail::Statement unindex_note;
};

}  // namespace loopr::store
