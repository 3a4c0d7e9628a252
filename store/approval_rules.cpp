// The approval rules `looprctl approve --always` saved (store.hpp, schema
// version 5). Read on every command call of a repository that has some, so
// the select uses the repo index; saving and forgetting are rare.
#include <sqlite3.h>

#include "store/sqlite_support.hpp"
#include "store/store.hpp"

namespace loopr::store {

using namespace detail;

Result<std::int64_t> Store::save_approval_rule(const std::string& repo,
                                               const nlohmann::json& rule) {
  const std::string text = rule.dump();
  if (repo.empty() || repo.size() > kMaxToolCallFieldBytes || text.size() > 64 * 1024) {
    return make_error(errc::internal, "store: a saved rule needs a repository and fits 64 KiB");
  }
  sqlite3* db = state_->db.get();
  auto statement = prepare_once(db,
                                "INSERT INTO approval_rules (repo, rule, saved_at_ms) "
                                "VALUES (?1, ?2, ?3)",
                                "saving an approval rule");
  if (!statement) return std::move(statement).error();
  sqlite3_stmt* insert = statement->get();
  int rc = bind_text(insert, 1, repo);
  if (rc == SQLITE_OK) rc = bind_text(insert, 2, text);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(insert, 3, now_unix_ms());
  if (rc == SQLITE_OK) rc = sqlite3_step(insert);
  if (rc != SQLITE_DONE) return store_error(db, rc, "saving an approval rule");
  return static_cast<std::int64_t>(sqlite3_last_insert_rowid(db));
}

Result<std::vector<SavedApprovalRule>> Store::saved_approval_rules(const std::string& repo) const {
  sqlite3* db = state_->db.get();
  auto statement =
      prepare_once(db,
                   repo.empty() ? "SELECT id, repo, rule, saved_at_ms FROM approval_rules "
                                  "ORDER BY id"
                                : "SELECT id, repo, rule, saved_at_ms FROM approval_rules "
                                  "WHERE repo = ?1 ORDER BY id",
                   "reading saved approval rules");
  if (!statement) return std::move(statement).error();
  if (!repo.empty()) {
    if (const int rc = bind_text(statement->get(), 1, repo); rc != SQLITE_OK) {
      return store_error(db, rc, "reading saved approval rules");
    }
  }
  std::vector<SavedApprovalRule> out;
  while (true) {
    const int rc = sqlite3_step(statement->get());
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) return store_error(db, rc, "reading saved approval rules");
    SavedApprovalRule saved;
    saved.id = sqlite3_column_int64(statement->get(), 0);
    saved.repo = column_string(statement->get(), 1);
    // A row edited by hand into something else reads as null; the caller
    // reports it by its id.
    saved.rule = nlohmann::json::parse(column_string(statement->get(), 2), nullptr, false);
    if (saved.rule.is_discarded()) saved.rule = nullptr;
    saved.saved_at_ms = sqlite3_column_int64(statement->get(), 3);
    out.push_back(std::move(saved));
  }
  return out;
}

Result<bool> Store::delete_approval_rule(std::int64_t id) {
  sqlite3* db = state_->db.get();
  auto statement =
      prepare_once(db, "DELETE FROM approval_rules WHERE id = ?1", "forgetting an approval rule");
  if (!statement) return std::move(statement).error();
  int rc = sqlite3_bind_int64(statement->get(), 1, id);
  if (rc == SQLITE_OK) rc = sqlite3_step(statement->get());
  if (rc != SQLITE_DONE) return store_error(db, rc, "forgetting an approval rule");
  return sqlite3_changes(db) > 0;
}

}  // namespace loopr::store
