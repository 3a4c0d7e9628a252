// The repositories whose .loopr/loopr.toml the user trusts (store.hpp,
// schema version 4). Rare operations (looprctl repo trust, a loop's
// creation, a build/test call), so each prepares its statement per call.
#include <sqlite3.h>

#include "store/sqlite_support.hpp"
#include "store/store.hpp"

namespace loopr::store {

using namespace detail;

namespace {

RepoTrust read_trust(sqlite3_stmt* select) {
  return RepoTrust{column_string(select, 0), column_string(select, 1),
                   sqlite3_column_int64(select, 2)};
}

}  // namespace

Result<void> Store::put_repo_trust(const RepoTrust& trust) {
  if (trust.repo.empty() || trust.repo.size() > kMaxToolCallFieldBytes ||
      trust.file_hash.size() > kMaxLoopFieldBytes) {
    return make_error(errc::internal, "store: a repository trust needs a path and a hash");
  }
  sqlite3* db = state_->db.get();
  auto statement = prepare_once(db,
                                "INSERT INTO repo_trust (repo, file_hash, trusted_at_ms) "
                                "VALUES (?1, ?2, ?3) ON CONFLICT (repo) DO UPDATE SET "
                                "file_hash = excluded.file_hash, "
                                "trusted_at_ms = excluded.trusted_at_ms",
                                "recording a repository's trust");
  if (!statement) return std::move(statement).error();
  sqlite3_stmt* insert = statement->get();
  int rc = bind_text(insert, 1, trust.repo);
  if (rc == SQLITE_OK) rc = bind_text(insert, 2, trust.file_hash);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(insert, 3, trust.trusted_at_ms);
  if (rc == SQLITE_OK) rc = sqlite3_step(insert);
  if (rc != SQLITE_DONE) return store_error(db, rc, "recording a repository's trust");
  return {};
}

Result<bool> Store::delete_repo_trust(const std::string& repo) {
  sqlite3* db = state_->db.get();
  auto statement =
      prepare_once(db, "DELETE FROM repo_trust WHERE repo = ?1", "forgetting a repository's trust");
  if (!statement) return std::move(statement).error();
  int rc = bind_text(statement->get(), 1, repo);
  if (rc == SQLITE_OK) rc = sqlite3_step(statement->get());
  if (rc != SQLITE_DONE) return store_error(db, rc, "forgetting a repository's trust");
  return sqlite3_changes(db) > 0;
}

Result<std::optional<RepoTrust>> Store::find_repo_trust(const std::string& repo) const {
  sqlite3* db = state_->db.get();
  auto statement =
      prepare_once(db, "SELECT repo, file_hash, trusted_at_ms FROM repo_trust WHERE repo = ?1",
                   "reading a repository's trust");
  if (!statement) return std::move(statement).error();
  int rc = bind_text(statement->get(), 1, repo);
  if (rc == SQLITE_OK) rc = sqlite3_step(statement->get());
  if (rc == SQLITE_DONE) return std::optional<RepoTrust>();
  if (rc != SQLITE_ROW) return store_error(db, rc, "reading a repository's trust");
  return std::optional<RepoTrust>(read_trust(statement->get()));
}

Result<std::vector<RepoTrust>> Store::all_repo_trust() const {
  sqlite3* db = state_->db.get();
  auto statement =
      prepare_once(db, "SELECT repo, file_hash, trusted_at_ms FROM repo_trust ORDER BY repo",
                   "listing trusted repositories");
  if (!statement) return std::move(statement).error();
  std::vector<RepoTrust> out;
  while (true) {
    const int rc = sqlite3_step(statement->get());
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) return store_error(db, rc, "listing trusted repositories");
    out.push_back(read_trust(statement->get()));
  }
  return out;
}

}  // namespace loopr::store
