// Memory notes and the full-text search over notes and conversations
// (store.hpp, schema version 3). The FTS5 index of notes (memory_fts, rowid =
// memory_notes.id) changes in the same transaction as the note, so a deleted
// note leaves no ghost in the index and a note a crash did not commit is in
// neither. (Not by triggers: looprd opens the database with an untrusted
// schema, where triggers may not write virtual tables.) Model turns are
// indexed as their journal step is appended (loop_records.cpp).
#include <sqlite3.h>

#include "store/sqlite_support.hpp"
#include "store/store.hpp"

namespace loopr::store {
namespace {

using namespace detail;
using nlohmann::json;

constexpr const char* kNoteColumns =
    "n.note_id, n.owner_uid, n.repo, n.content, n.tags, n.source, n.created_at_ms, "
    "n.updated_at_ms";

std::string tags_text(const std::vector<std::string>& tags) {
  json array = json::array();
  for (const std::string& tag : tags)
    array.push_back(tag);
  return array.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::vector<std::string> parse_tags(const std::string& text) {
  std::vector<std::string> tags;
  json array = json::parse(text, nullptr, false);
  if (!array.is_array()) return tags;
  for (const json& tag : array)
    if (tag.is_string()) tags.push_back(tag.get<std::string>());
  return tags;
}

// The columns of kNoteColumns from `first` on.
MemoryNote read_note(sqlite3_stmt* select, int first = 0) {
  MemoryNote note;
  note.note_id = column_string(select, first + 0);
  note.owner_uid = sqlite3_column_int64(select, first + 1);
  note.repo = column_string(select, first + 2);
  note.content = column_string(select, first + 3);
  note.tags = parse_tags(column_string(select, first + 4));
  note.source = column_string(select, first + 5);
  note.created_at_ms = sqlite3_column_int64(select, first + 6);
  note.updated_at_ms = sqlite3_column_int64(select, first + 7);
  return note;
}

Result<void> check_note_text(const std::string& text, const char* field) {
  if (text.size() > kMaxNoteBytes) {
    return make_error(errc::too_large, std::string("store: note ") + field + " is " +
                                           std::to_string(text.size()) + " bytes, over " +
                                           std::to_string(kMaxNoteBytes));
  }
  return {};
}

int bind_style(sqlite3_stmt* statement, int first, const SnippetStyle& style) {
  int rc = bind_text(statement, first, style.open);
  if (rc == SQLITE_OK) rc = bind_text(statement, first + 1, style.close);
  if (rc == SQLITE_OK) rc = bind_text(statement, first + 2, style.ellipsis);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int(statement, first + 3, std::clamp(style.tokens, 1, 64));
  return rc;
}

// A MATCH expression FTS5 refused: the caller built it, so this is a bug in
// loopr, not the user's input (memory::fts_query() only builds valid ones).
Error match_error(sqlite3* db, int rc, std::string_view operation) {
  Error error = store_error(db, rc, operation);
  if ((rc & 0xff) == SQLITE_ERROR) {
    error.code = errc::internal;
    error.hint = "the search expression was not valid FTS5; report this as a loopr bug";
  }
  return error;
}

}  // namespace

void Store::prepare_note_statements(State& state) {
  sqlite3* db = state.db.get();
  const std::string& path = state.path;
  state.insert_note = prepare(db, path,
                              "INSERT INTO memory_notes (note_id, owner_uid, repo, content, tags, "
                              "source, created_at_ms, updated_at_ms) "
                              "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
  state.update_note = prepare(db, path,
                              "UPDATE memory_notes SET content = ?3, updated_at_ms = ?4 "
                              "WHERE owner_uid = ?1 AND note_id = ?2");
  state.update_note_tags =
      prepare(db, path,
              "UPDATE memory_notes SET content = ?3, updated_at_ms = ?4, tags = ?5 "
              "WHERE owner_uid = ?1 AND note_id = ?2");
  state.delete_note =
      prepare(db, path, "DELETE FROM memory_notes WHERE owner_uid = ?1 AND note_id = ?2");
  state.select_note = prepare(db, path,
                              (std::string("SELECT ") + kNoteColumns +
                               " FROM memory_notes n WHERE n.owner_uid = ?1 AND n.note_id = ?2")
                                  .c_str());
  state.select_note_row =
      prepare(db, path, "SELECT id, tags FROM memory_notes WHERE owner_uid = ?1 AND note_id = ?2");
  state.index_note =
      prepare(db, path, "INSERT INTO memory_fts (rowid, content, tags) VALUES (?1, ?2, ?3)");
  state.unindex_note = prepare(db, path, "DELETE FROM memory_fts WHERE rowid = ?1");
  state.count_notes =
      prepare(db, path, "SELECT count(*) FROM memory_notes WHERE owner_uid = ?1 AND repo = ?2");
}

namespace {

// memory_fts row `rowid` := (content, tags); the old row, if any, goes first.
Result<void> reindex(sqlite3* db, const Statement& unindex, const Statement* index,
                     std::int64_t rowid, const std::string& content, const std::string& tags) {
  {
    StatementUse use(unindex);
    int rc = sqlite3_bind_int64(use.get(), 1, rowid);
    if (rc == SQLITE_OK) rc = sqlite3_step(use.get());
    if (rc != SQLITE_DONE) return store_error(db, rc, "removing a note from the search index");
  }
  if (index == nullptr) return {};
  StatementUse use(*index);
  int rc = sqlite3_bind_int64(use.get(), 1, rowid);
  if (rc == SQLITE_OK) rc = bind_text(use.get(), 2, content);
  if (rc == SQLITE_OK) rc = bind_text(use.get(), 3, tags);
  if (rc == SQLITE_OK) rc = sqlite3_step(use.get());
  if (rc != SQLITE_DONE) return store_error(db, rc, "adding a note to the search index");
  return {};
}

struct NoteRow {
  std::int64_t rowid = 0;
  std::string tags;
};

Result<std::optional<NoteRow>> note_row(sqlite3* db, const Statement& select,
                                        std::int64_t owner_uid, const std::string& note_id) {
  StatementUse use(select);
  int rc = sqlite3_bind_int64(use.get(), 1, owner_uid);
  if (rc == SQLITE_OK) rc = bind_text(use.get(), 2, note_id);
  if (rc != SQLITE_OK) return store_error(db, rc, "binding a memory note");
  rc = sqlite3_step(use.get());
  if (rc == SQLITE_DONE) return std::optional<NoteRow>();
  if (rc != SQLITE_ROW) return store_error(db, rc, "reading a memory note");
  return std::optional<NoteRow>(
      NoteRow{sqlite3_column_int64(use.get(), 0), column_string(use.get(), 1)});
}

}  // namespace

Result<void> Store::insert_note(const MemoryNote& note) {
  if (auto ok = check_note_text(note.content, "text"); !ok) return ok;
  const std::string tags = tags_text(note.tags);
  if (auto ok = check_note_text(tags, "tags"); !ok) return ok;
  if (note.note_id.empty() || note.note_id.size() > kMaxLoopFieldBytes) {
    return make_error(errc::internal, "store: a note needs an id of at most 256 bytes");
  }
  sqlite3* db = state_->db.get();
  Transaction transaction(db);
  if (transaction.begun() != SQLITE_OK) {
    return store_error(db, transaction.begun(), "beginning a transaction");
  }
  {
    StatementUse use(state_->insert_note);
    sqlite3_stmt* insert = use.get();
    int rc = bind_text(insert, 1, note.note_id);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(insert, 2, note.owner_uid);
    if (rc == SQLITE_OK) rc = bind_text(insert, 3, note.repo);
    if (rc == SQLITE_OK) rc = bind_text(insert, 4, note.content);
    if (rc == SQLITE_OK) rc = bind_text(insert, 5, tags);
    if (rc == SQLITE_OK) rc = bind_text(insert, 6, note.source);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(insert, 7, note.created_at_ms);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(insert, 8, note.updated_at_ms);
    if (rc != SQLITE_OK) return store_error(db, rc, "binding a memory note");
    rc = sqlite3_step(insert);
    if ((rc & 0xff) == SQLITE_CONSTRAINT) {
      return make_error(errc::invalid_arguments, "store: note " + note.note_id + " exists already");
    }
    if (rc != SQLITE_DONE) return store_error(db, rc, "saving a memory note");
  }
  const std::int64_t rowid = sqlite3_last_insert_rowid(db);
  if (auto ok = reindex(db, state_->unindex_note, &state_->index_note, rowid, note.content, tags);
      !ok) {
    return ok;
  }
  if (const int rc = transaction.commit(); rc != SQLITE_OK) {
    return store_error(db, rc, "committing a memory note");
  }
  return {};
}

Result<bool> Store::update_note(std::int64_t owner_uid, const std::string& note_id,
                                const std::string& content,
                                const std::optional<std::vector<std::string>>& tags,
                                std::int64_t updated_at_ms) {
  if (auto ok = check_note_text(content, "text"); !ok) return std::move(ok).error();
  sqlite3* db = state_->db.get();
  Transaction transaction(db);
  if (transaction.begun() != SQLITE_OK) {
    return store_error(db, transaction.begun(), "beginning a transaction");
  }
  auto row = note_row(db, state_->select_note_row, owner_uid, note_id);
  if (!row) return std::move(row).error();
  if (!*row) return false;
  const std::string tag_text = tags ? tags_text(*tags) : (*row)->tags;
  if (auto ok = check_note_text(tag_text, "tags"); !ok) return std::move(ok).error();
  {
    StatementUse use(tags ? state_->update_note_tags : state_->update_note);
    sqlite3_stmt* update = use.get();
    int rc = sqlite3_bind_int64(update, 1, owner_uid);
    if (rc == SQLITE_OK) rc = bind_text(update, 2, note_id);
    if (rc == SQLITE_OK) rc = bind_text(update, 3, content);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(update, 4, updated_at_ms);
    if (rc == SQLITE_OK && tags) rc = bind_text(update, 5, tag_text);
    if (rc != SQLITE_OK) return store_error(db, rc, "binding a memory note");
    rc = sqlite3_step(update);
    if (rc != SQLITE_DONE) return store_error(db, rc, "updating a memory note");
  }
  if (auto ok =
          reindex(db, state_->unindex_note, &state_->index_note, (*row)->rowid, content, tag_text);
      !ok) {
    return std::move(ok).error();
  }
  if (const int rc = transaction.commit(); rc != SQLITE_OK) {
    return store_error(db, rc, "committing a memory note");
  }
  return true;
}

Result<bool> Store::delete_note(std::int64_t owner_uid, const std::string& note_id) {
  sqlite3* db = state_->db.get();
  Transaction transaction(db);
  if (transaction.begun() != SQLITE_OK) {
    return store_error(db, transaction.begun(), "beginning a transaction");
  }
  auto row = note_row(db, state_->select_note_row, owner_uid, note_id);
  if (!row) return std::move(row).error();
  if (!*row) return false;
  {
    StatementUse use(state_->delete_note);
    sqlite3_stmt* remove = use.get();
    int rc = sqlite3_bind_int64(remove, 1, owner_uid);
    if (rc == SQLITE_OK) rc = bind_text(remove, 2, note_id);
    if (rc != SQLITE_OK) return store_error(db, rc, "binding a memory note");
    rc = sqlite3_step(remove);
    if (rc != SQLITE_DONE) return store_error(db, rc, "deleting a memory note");
  }
  if (auto ok = reindex(db, state_->unindex_note, nullptr, (*row)->rowid, {}, {}); !ok) {
    return std::move(ok).error();
  }
  if (const int rc = transaction.commit(); rc != SQLITE_OK) {
    return store_error(db, rc, "committing a note's deletion");
  }
  return true;
}

Result<std::optional<MemoryNote>> Store::find_note(std::int64_t owner_uid,
                                                   const std::string& note_id) const {
  sqlite3* db = state_->db.get();
  StatementUse use(state_->select_note);
  sqlite3_stmt* select = use.get();
  int rc = sqlite3_bind_int64(select, 1, owner_uid);
  if (rc == SQLITE_OK) rc = bind_text(select, 2, note_id);
  if (rc != SQLITE_OK) return store_error(db, rc, "binding a memory note");
  rc = sqlite3_step(select);
  if (rc == SQLITE_DONE) return std::optional<MemoryNote>();
  if (rc != SQLITE_ROW) return store_error(db, rc, "reading a memory note");
  return std::optional<MemoryNote>(read_note(select));
}

Result<std::vector<MemoryNote>> Store::list_notes(const NoteScope& scope, std::size_t limit,
                                                  std::size_t offset) const {
  sqlite3* db = state_->db.get();
  auto statement = prepare_once(db,
                                std::string("SELECT ") + kNoteColumns +
                                    " FROM memory_notes n WHERE n.owner_uid = ?1 AND "
                                    "(?2 IS NULL OR n.repo = ?2 OR n.repo = '') "
                                    "ORDER BY n.updated_at_ms DESC, n.id DESC LIMIT ?3 OFFSET ?4",
                                "listing memory notes");
  if (!statement) return std::move(statement).error();
  sqlite3_stmt* select = statement->get();
  int rc = sqlite3_bind_int64(select, 1, scope.owner_uid);
  if (rc == SQLITE_OK && scope.repo) rc = bind_text(select, 2, *scope.repo);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(select, 3, static_cast<std::int64_t>(limit));
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(select, 4, static_cast<std::int64_t>(offset));
  if (rc != SQLITE_OK) return store_error(db, rc, "binding a note listing");
  std::vector<MemoryNote> notes;
  while ((rc = sqlite3_step(select)) == SQLITE_ROW)
    notes.push_back(read_note(select));
  if (rc != SQLITE_DONE) return store_error(db, rc, "listing memory notes");
  return notes;
}

Result<std::int64_t> Store::count_notes(std::int64_t owner_uid, const std::string& repo) const {
  sqlite3* db = state_->db.get();
  StatementUse use(state_->count_notes);
  sqlite3_stmt* count = use.get();
  int rc = sqlite3_bind_int64(count, 1, owner_uid);
  if (rc == SQLITE_OK) rc = bind_text(count, 2, repo);
  if (rc != SQLITE_OK) return store_error(db, rc, "binding a note count");
  rc = sqlite3_step(count);
  if (rc != SQLITE_ROW) return store_error(db, rc, "counting memory notes");
  return static_cast<std::int64_t>(sqlite3_column_int64(count, 0));
}

Result<std::vector<NoteHit>> Store::search_notes(const NoteScope& scope, const std::string& match,
                                                 std::size_t limit,
                                                 const SnippetStyle& style) const {
  sqlite3* db = state_->db.get();
  auto statement =
      prepare_once(db,
                   std::string("SELECT ") + kNoteColumns +
                       ", bm25(memory_fts) AS rank, snippet(memory_fts, 0, ?5, ?6, ?7, ?8) "
                       "FROM memory_fts JOIN memory_notes n ON n.id = memory_fts.rowid "
                       "WHERE memory_fts MATCH ?1 AND n.owner_uid = ?2 AND "
                       "(?3 IS NULL OR n.repo = ?3 OR n.repo = '') ORDER BY rank, n.id LIMIT ?4",
                   "searching memory notes");
  if (!statement) return std::move(statement).error();
  sqlite3_stmt* select = statement->get();
  int rc = bind_text(select, 1, match);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(select, 2, scope.owner_uid);
  if (rc == SQLITE_OK && scope.repo) rc = bind_text(select, 3, *scope.repo);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(select, 4, static_cast<std::int64_t>(limit));
  if (rc == SQLITE_OK) rc = bind_style(select, 5, style);
  if (rc != SQLITE_OK) return store_error(db, rc, "binding a note search");
  std::vector<NoteHit> hits;
  while ((rc = sqlite3_step(select)) == SQLITE_ROW) {
    NoteHit hit;
    hit.note = read_note(select);
    hit.rank = sqlite3_column_double(select, 8);
    hit.snippet = column_string(select, 9);
    hits.push_back(std::move(hit));
  }
  if (rc != SQLITE_DONE) return match_error(db, rc, "searching memory notes");
  return hits;
}

Result<std::vector<ConversationHit>> Store::search_conversation(const std::string& repo,
                                                                const std::string& match,
                                                                std::size_t limit,
                                                                const SnippetStyle& style) const {
  sqlite3* db = state_->db.get();
  auto statement = prepare_once(
      db,
      "SELECT c.rowid, c.loop_id, c.iteration, c.at_ms, c.text, bm25(conversation_fts) AS rank, "
      "snippet(conversation_fts, 0, ?4, ?5, ?6, ?7) "
      "FROM conversation_fts c JOIN loops l ON l.id = c.loop_id "
      "WHERE conversation_fts MATCH ?1 AND json_extract(l.spec, '$.repo') = ?2 "
      "AND json_extract(l.state, '$.deleted') IS NOT 1 "
      "ORDER BY rank, c.rowid LIMIT ?3",
      "searching conversations");
  if (!statement) return std::move(statement).error();
  sqlite3_stmt* select = statement->get();
  int rc = bind_text(select, 1, match);
  if (rc == SQLITE_OK) rc = bind_text(select, 2, repo);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(select, 3, static_cast<std::int64_t>(limit));
  if (rc == SQLITE_OK) rc = bind_style(select, 4, style);
  if (rc != SQLITE_OK) return store_error(db, rc, "binding a conversation search");
  std::vector<ConversationHit> hits;
  while ((rc = sqlite3_step(select)) == SQLITE_ROW) {
    ConversationHit hit;
    hit.step_id = sqlite3_column_int64(select, 0);
    hit.loop_id = column_string(select, 1);
    hit.iteration = sqlite3_column_int64(select, 2);
    hit.at_ms = sqlite3_column_int64(select, 3);
    hit.text = column_string(select, 4);
    hit.rank = sqlite3_column_double(select, 5);
    hit.snippet = column_string(select, 6);
    hits.push_back(std::move(hit));
  }
  if (rc != SQLITE_DONE) return match_error(db, rc, "searching conversations");
  return hits;
}

}  // namespace loopr::store
