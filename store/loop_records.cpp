// The loops and their journal (store.hpp, schema version 2). Every write that
// changes a loop's status goes through one transaction with the journal step
// that explains it, so after a crash the row and its journal agree.
#include <sqlite3.h>

#include <algorithm>

#include "store/sqlite_support.hpp"
#include "store/store.hpp"

namespace loopr::store {
namespace {

using namespace detail;
using nlohmann::json;

Result<void> check_text(const std::string& text, const char* field, std::size_t cap) {
  if (text.size() > cap) {
    return make_error(errc::too_large, std::string("store: loop field '") + field + "' is " +
                                           std::to_string(text.size()) + " bytes, over " +
                                           std::to_string(cap));
  }
  return {};
}

// A document as stored: compact JSON, invalid UTF-8 replaced.
Result<std::string> document(const json& value, const char* field) {
  if (!value.is_object()) {
    return make_error(errc::internal, std::string("store: loop ") + field + " is not an object");
  }
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  if (auto ok = check_text(text, field, kMaxLoopDocumentBytes); !ok) return std::move(ok).error();
  return text;
}

json parse_document(const std::string& text) {
  json value = json::parse(text, nullptr, false);
  return value.is_object() ? value : json::object();
}

Result<void> check_row(const LoopRow& row) {
  for (const auto& [name, text] : {std::pair<const char*, const std::string*>{"id", &row.id},
                                   {"type", &row.type},
                                   {"parent_id", &row.parent_id},
                                   {"status", &row.status}}) {
    if (auto ok = check_text(*text, name, kMaxLoopFieldBytes); !ok) return ok;
  }
  if (row.id.empty()) return make_error(errc::internal, "store: a loop needs an id");
  return {};
}

LoopRow read_row(sqlite3_stmt* select) {
  LoopRow row;
  row.id = column_string(select, 0);
  row.seq = sqlite3_column_int64(select, 1);
  row.type = column_string(select, 2);
  row.parent_id = column_string(select, 3);
  row.status = column_string(select, 4);
  row.spec = parse_document(column_string(select, 5));
  row.state = parse_document(column_string(select, 6));
  row.created_at_ms = sqlite3_column_int64(select, 7);
  row.updated_at_ms = sqlite3_column_int64(select, 8);
  return row;
}

}  // namespace

void Store::prepare_loop_statements(State& state) {
  sqlite3* db = state.db.get();
  const std::string& path = state.path;
  constexpr const char* kColumns =
      "id, seq, type, parent_id, status, spec, state, created_at_ms, updated_at_ms";
  state.insert_loop =
      prepare(db, path,
              "INSERT INTO loops (id, seq, type, parent_id, status, spec, state, created_at_ms, "
              "updated_at_ms) VALUES (?1, ?2, ?3, NULLIF(?4, ''), ?5, ?6, ?7, ?8, ?9)");
  state.update_loop = prepare(
      db, path,
      "UPDATE loops SET status = ?2, state = ?3, updated_at_ms = ?4, spec = coalesce(?5, spec) "
      "WHERE id = ?1");
  state.select_loops =
      prepare(db, path, (std::string("SELECT ") + kColumns + " FROM loops ORDER BY seq").c_str());
  state.select_loop =
      prepare(db, path, (std::string("SELECT ") + kColumns + " FROM loops WHERE id = ?1").c_str());
  state.insert_loop_step = prepare(
      db, path,
      "INSERT INTO loop_steps (loop_id, iteration, kind, data, at_ms) VALUES (?1, ?2, ?3, ?4, ?5)");
  state.select_loop_steps = prepare(
      db, path,
      "SELECT id, loop_id, iteration, kind, data, at_ms FROM loop_steps WHERE loop_id = ?1 AND "
      "id > ?2 AND (?3 IS NULL OR iteration = ?3) ORDER BY id LIMIT ?4");
  state.count_loop_steps = prepare(db, path, "SELECT count(*) FROM loop_steps WHERE loop_id = ?1");
  state.insert_conversation_text =
      prepare(db, path,
              "INSERT INTO conversation_fts (rowid, text, loop_id, iteration, at_ms) "
              "VALUES (?1, ?2, ?3, ?4, ?5)");
}

Result<std::int64_t> Store::next_loop_seq() const {
  std::int64_t max_seq = 0;
  const int rc = query_int(state_->db.get(), "SELECT coalesce(max(seq), 0) FROM loops", max_seq);
  if (rc != SQLITE_OK) return store_error(state_->db.get(), rc, "reading the loop sequence");
  return max_seq + 1;
}

namespace {

// A model turn's text, indexed for memory_search's include_conversation
// (memory_notes.cpp) in the transaction that appends its step.
Result<void> index_conversation(sqlite3* db, const Statement& index, const LoopStep& step,
                                std::int64_t step_id) {
  if (step.kind != "model_turn") return {};
  auto turn = step.data.find("turn");
  if (turn == step.data.end() || !turn->is_object()) return {};
  auto text = turn->find("text");
  if (text == turn->end() || !text->is_string() || text->get_ref<const std::string&>().empty()) {
    return {};
  }
  const std::string& words = text->get_ref<const std::string&>();
  StatementUse use(index);
  sqlite3_stmt* insert = use.get();
  int rc = sqlite3_bind_int64(insert, 1, step_id);
  if (rc == SQLITE_OK) rc = bind_text(insert, 2, words);
  if (rc == SQLITE_OK) rc = bind_text(insert, 3, step.loop_id);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(insert, 4, step.iteration);
  if (rc == SQLITE_OK)
    rc = sqlite3_bind_int64(insert, 5, step.at_ms != 0 ? step.at_ms : now_unix_ms());
  if (rc != SQLITE_OK) return store_error(db, rc, "binding a conversation text");
  rc = sqlite3_step(insert);
  if (rc != SQLITE_DONE) return store_error(db, rc, "indexing a conversation text");
  return {};
}

Result<std::int64_t> insert_step(sqlite3* db, sqlite3_stmt* insert, const LoopStep& step) {
  if (auto ok = check_text(step.kind, "kind", kMaxLoopFieldBytes); !ok)
    return std::move(ok).error();
  auto data = document(step.data, "step data");
  if (!data) return std::move(data).error();
  int rc = bind_text(insert, 1, step.loop_id);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(insert, 2, step.iteration);
  if (rc == SQLITE_OK) rc = bind_text(insert, 3, step.kind);
  if (rc == SQLITE_OK) rc = bind_text(insert, 4, *data);
  if (rc == SQLITE_OK)
    rc = sqlite3_bind_int64(insert, 5, step.at_ms != 0 ? step.at_ms : now_unix_ms());
  if (rc != SQLITE_OK) return store_error(db, rc, "binding a loop step");
  rc = sqlite3_step(insert);
  if (rc != SQLITE_DONE) return store_error(db, rc, "appending a loop step");
  return static_cast<std::int64_t>(sqlite3_last_insert_rowid(db));
}

Result<void> write_update(sqlite3* db, sqlite3_stmt* update, const LoopRow& row) {
  auto state = document(row.state, "state");
  if (!state) return std::move(state).error();
  int rc = bind_text(update, 1, row.id);
  if (rc == SQLITE_OK) rc = bind_text(update, 2, row.status);
  if (rc == SQLITE_OK) rc = bind_text(update, 3, *state);
  if (rc == SQLITE_OK) {
    rc = sqlite3_bind_int64(update, 4, row.updated_at_ms != 0 ? row.updated_at_ms : now_unix_ms());
  }
  std::string spec_text;
  if (rc == SQLITE_OK && !row.spec.is_null()) {
    auto spec = document(row.spec, "spec");
    if (!spec) return std::move(spec).error();
    spec_text = std::move(*spec);
    rc = bind_text(update, 5, spec_text);
  } else if (rc == SQLITE_OK) {
    rc = sqlite3_bind_null(update, 5);
  }
  if (rc != SQLITE_OK) return store_error(db, rc, "binding a loop update");
  rc = sqlite3_step(update);
  if (rc != SQLITE_DONE) return store_error(db, rc, "updating a loop");
  if (sqlite3_changes(db) != 1) {
    return make_error(errc::not_found, "store: no loop '" + row.id + "' to update");
  }
  return {};
}

}  // namespace

namespace {

Result<void> insert_row(sqlite3* db, sqlite3_stmt* insert, const LoopRow& row) {
  if (auto ok = check_row(row); !ok) return ok;
  auto spec = document(row.spec, "spec");
  if (!spec) return std::move(spec).error();
  auto loop_state = document(row.state, "state");
  if (!loop_state) return std::move(loop_state).error();
  const std::int64_t now = now_unix_ms();
  int rc = bind_text(insert, 1, row.id);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(insert, 2, row.seq);
  if (rc == SQLITE_OK) rc = bind_text(insert, 3, row.type);
  if (rc == SQLITE_OK) rc = bind_text(insert, 4, row.parent_id);
  if (rc == SQLITE_OK) rc = bind_text(insert, 5, row.status);
  if (rc == SQLITE_OK) rc = bind_text(insert, 6, *spec);
  if (rc == SQLITE_OK) rc = bind_text(insert, 7, *loop_state);
  if (rc == SQLITE_OK)
    rc = sqlite3_bind_int64(insert, 8, row.created_at_ms ? row.created_at_ms : now);
  if (rc == SQLITE_OK)
    rc = sqlite3_bind_int64(insert, 9, row.updated_at_ms ? row.updated_at_ms : now);
  if (rc != SQLITE_OK) return store_error(db, rc, "binding a new loop");
  rc = sqlite3_step(insert);
  if ((rc & 0xff) == SQLITE_CONSTRAINT) {
    return make_error(errc::invalid_arguments, "store: a loop '" + row.id + "' already exists");
  }
  if (rc != SQLITE_DONE) return store_error(db, rc, "inserting a loop");
  return {};
}

}  // namespace

Result<void> Store::insert_loop(const LoopRow& row, const LoopStep* first_step) {
  std::vector<NewLoop> one{{row, first_step ? std::optional<LoopStep>(*first_step) : std::nullopt}};
  return insert_loops(one, nullptr, nullptr);
}

Result<void> Store::insert_loops(const std::vector<NewLoop>& loops, const LoopStep* parent_step,
                                 const LoopRow* parent_row) {
  if (parent_row != nullptr) {
    if (auto ok = check_row(*parent_row); !ok) return ok;
  }
  sqlite3* db = state_->db.get();
  Transaction transaction(db);
  if (transaction.begun() != SQLITE_OK) {
    return store_error(db, transaction.begun(), "beginning a transaction");
  }
  for (const NewLoop& loop : loops) {
    {
      const StatementUse use(state_->insert_loop);
      if (auto ok = insert_row(db, use.get(), loop.row); !ok) return ok;
    }
    if (loop.first_step) {
      const StatementUse use(state_->insert_loop_step);
      auto id = insert_step(db, use.get(), *loop.first_step);
      if (!id) return std::move(id).error();
    }
  }
  if (parent_step != nullptr) {
    const StatementUse use(state_->insert_loop_step);
    auto id = insert_step(db, use.get(), *parent_step);
    if (!id) return std::move(id).error();
  }
  if (parent_row != nullptr) {
    const StatementUse use(state_->update_loop);
    if (auto ok = write_update(db, use.get(), *parent_row); !ok) return ok;
  }
  if (const int rc = transaction.commit(); rc != SQLITE_OK) {
    return store_error(db, rc, "committing new loops");
  }
  return {};
}

Result<std::int64_t> Store::append_loop_step(const LoopStep& step, const LoopRow* row) {
  if (row != nullptr) {
    if (auto ok = check_row(*row); !ok) return std::move(ok).error();
  }
  sqlite3* db = state_->db.get();
  Transaction transaction(db);
  if (transaction.begun() != SQLITE_OK) {
    return store_error(db, transaction.begun(), "beginning a transaction");
  }
  std::int64_t id = 0;
  {
    const StatementUse use(state_->insert_loop_step);
    auto inserted = insert_step(db, use.get(), step);
    if (!inserted) return std::move(inserted).error();
    id = *inserted;
  }
  if (auto indexed = index_conversation(db, state_->insert_conversation_text, step, id); !indexed) {
    return std::move(indexed).error();
  }
  if (row != nullptr) {
    const StatementUse use(state_->update_loop);
    if (auto ok = write_update(db, use.get(), *row); !ok) return std::move(ok).error();
  }
  if (const int rc = transaction.commit(); rc != SQLITE_OK) {
    return store_error(db, rc, "committing a loop step");
  }
  return id;
}

Result<void> Store::update_loop(const LoopRow& row) {
  if (auto ok = check_row(row); !ok) return ok;
  const StatementUse use(state_->update_loop);
  return write_update(state_->db.get(), use.get(), row);
}

Result<std::optional<LoopRow>> Store::find_loop(const std::string& id) const {
  sqlite3* db = state_->db.get();
  const StatementUse use(state_->select_loop);
  int rc = bind_text(use.get(), 1, id);
  if (rc != SQLITE_OK) return store_error(db, rc, "binding a loop id");
  rc = sqlite3_step(use.get());
  if (rc == SQLITE_DONE) return std::optional<LoopRow>();
  if (rc != SQLITE_ROW) return store_error(db, rc, "reading a loop");
  return std::optional<LoopRow>(read_row(use.get()));
}

Result<std::vector<LoopRow>> Store::all_loops() const {
  sqlite3* db = state_->db.get();
  const StatementUse use(state_->select_loops);
  std::vector<LoopRow> rows;
  int rc = SQLITE_OK;
  while ((rc = sqlite3_step(use.get())) == SQLITE_ROW)
    rows.push_back(read_row(use.get()));
  if (rc != SQLITE_DONE) return store_error(db, rc, "reading loops");
  return rows;
}

Result<std::vector<LoopStep>> Store::loop_steps(const std::string& loop_id,
                                                std::optional<std::int64_t> iteration,
                                                std::int64_t after_id, std::size_t limit) const {
  sqlite3* db = state_->db.get();
  const StatementUse use(state_->select_loop_steps);
  sqlite3_stmt* select = use.get();
  int rc = bind_text(select, 1, loop_id);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(select, 2, after_id);
  if (rc == SQLITE_OK) {
    rc = iteration ? sqlite3_bind_int64(select, 3, *iteration) : sqlite3_bind_null(select, 3);
  }
  if (rc == SQLITE_OK) {
    rc = sqlite3_bind_int64(select, 4,
                            static_cast<sqlite3_int64>(std::min<std::size_t>(limit, 100000000)));
  }
  if (rc != SQLITE_OK) return store_error(db, rc, "binding a journal query");
  std::vector<LoopStep> steps;
  while ((rc = sqlite3_step(select)) == SQLITE_ROW) {
    LoopStep step;
    step.id = sqlite3_column_int64(select, 0);
    step.loop_id = column_string(select, 1);
    step.iteration = sqlite3_column_int64(select, 2);
    step.kind = column_string(select, 3);
    step.data = parse_document(column_string(select, 4));
    step.at_ms = sqlite3_column_int64(select, 5);
    steps.push_back(std::move(step));
  }
  if (rc != SQLITE_DONE) return store_error(db, rc, "reading a loop's journal");
  return steps;
}

Result<std::int64_t> Store::count_loop_steps(const std::string& loop_id) const {
  sqlite3* db = state_->db.get();
  const StatementUse use(state_->count_loop_steps);
  int rc = bind_text(use.get(), 1, loop_id);
  if (rc != SQLITE_OK) return store_error(db, rc, "binding a loop id");
  rc = sqlite3_step(use.get());
  if (rc != SQLITE_ROW) return store_error(db, rc, "counting a loop's journal");
  return static_cast<std::int64_t>(sqlite3_column_int64(use.get(), 0));
}

}  // namespace loopr::store
