// The approval rules `looprctl approve --always` saved (store.hpp, schema
// version 5). Read on every command call of a repository that has some, so
// the select uses the repo index; saving and forgetting are rare.
#include <sqlite3.h>

#include "store/sqlite_support.hpp"
#include "store/store.hpp"

namespace loopr::store {

using namespace detail;

Result<std::vector<std::int64_t>> Store::save_approval_rules(
    const std::string& repo, const std::vector<nlohmann::json>& rules) {
  if (repo.empty() || repo.size() > kMaxToolCallFieldBytes) {
    return make_error(errc::internal, "store: a saved rule needs a repository");
  }
  sqlite3* db = state_->db.get();
  auto find = prepare_once(db, "SELECT id FROM approval_rules WHERE repo = ?1 AND rule = ?2",
                           "saving approval rules");
  if (!find) return std::move(find).error();
  auto insert = prepare_once(db,
                             "INSERT INTO approval_rules (repo, rule, saved_at_ms) "
                             "VALUES (?1, ?2, ?3)",
                             "saving approval rules");
  if (!insert) return std::move(insert).error();
  // All or none: a rule saved without the others would allow part of the line.
  Transaction transaction(db);
  int rc = transaction.begun();
  if (rc != SQLITE_OK) return store_error(db, rc, "saving approval rules");
  std::vector<std::int64_t> ids;
  for (const nlohmann::json& rule : rules) {
    const std::string text = rule.dump();
    if (text.size() > 64 * 1024)
      return make_error(errc::internal, "store: a saved rule fits 64 KiB");
    // The same rule saved again keeps its first id.
    sqlite3_reset(find->get());
    rc = bind_text(find->get(), 1, repo);
    if (rc == SQLITE_OK) rc = bind_text(find->get(), 2, text);
    if (rc == SQLITE_OK) rc = sqlite3_step(find->get());
    if (rc == SQLITE_ROW) {
      ids.push_back(sqlite3_column_int64(find->get(), 0));
      continue;
    }
    if (rc == SQLITE_DONE) {
      sqlite3_reset(insert->get());
      rc = bind_text(insert->get(), 1, repo);
      if (rc == SQLITE_OK) rc = bind_text(insert->get(), 2, text);
      if (rc == SQLITE_OK) rc = sqlite3_bind_int64(insert->get(), 3, now_unix_ms());
      if (rc == SQLITE_OK) rc = sqlite3_step(insert->get());
    }
    if (rc != SQLITE_DONE) return store_error(db, rc, "saving approval rules");
    ids.push_back(static_cast<std::int64_t>(sqlite3_last_insert_rowid(db)));
  }
  rc = transaction.commit();
  if (rc != SQLITE_OK) return store_error(db, rc, "saving approval rules");
  return ids;
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
