#include "loopr-fetch/html_text.hpp"

#include <libxml/HTMLparser.h>
#include <libxml/parser.h>
#include <libxml/tree.h>

#include <climits>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/utf8.hpp"
#include "loopr-fetch/fetch_url.hpp"

namespace loopr::fetch {
namespace {

struct DocDeleter {
  void operator()(xmlDoc* doc) const { xmlFreeDoc(doc); }
};

std::string_view name_of(const xmlNode* node) {
  return node->name ? reinterpret_cast<const char*>(node->name) : "";
}

bool is_one_of(std::string_view name, std::initializer_list<std::string_view> names) {
  for (std::string_view candidate : names) {
    if (name == candidate) return true;
  }
  return false;
}

// Never shown, nor anything inside them.
bool is_hidden(std::string_view name) {
  return is_one_of(
      name, {"head", "script", "style", "noscript", "template", "svg", "math", "iframe", "object",
             "embed", "canvas", "select", "button", "input", "textarea", "audio", "video"});
}

// Blocks separated by a blank line.
bool is_paragraph_block(std::string_view name) {
  return is_one_of(name, {"p", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "ul", "ol",
                          "table", "dl", "figure", "details"});
}

// Blocks that start on a line of their own.
bool is_line_block(std::string_view name) {
  return is_one_of(name,
                   {"div", "section",    "article", "main",    "aside",   "header",   "footer",
                    "nav", "figcaption", "address", "summary", "form",    "fieldset", "center",
                    "li",  "dt",         "dd",      "tr",      "caption", "body",     "html"});
}

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::string property(const xmlNode* node, const char* name) {
  xmlChar* value = xmlGetProp(node, reinterpret_cast<const xmlChar*>(name));
  if (value == nullptr) return {};
  std::string text(reinterpret_cast<const char*>(value));
  xmlFree(value);
  return text;
}

std::string collapse_whitespace(std::string_view text) {
  std::string out;
  bool space = false;
  for (char c : text) {
    if (is_space(c)) {
      space = true;
      continue;
    }
    if (space && !out.empty()) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

// The output being built: whitespace collapsed, blocks separated, and each
// line started with the prefix of the lists and quotes it is inside.
class TextWriter {
 public:
  // Words from the page: runs of whitespace become one space, none at the
  // start of a line.
  void text(std::string_view words) {
    for (char c : words) {
      if (is_space(c)) {
        pending_space_ = true;
      } else {
        begin_inline();
        out_ += c;
      }
    }
  }
  // <pre> content: every byte as it is, line by line.
  void verbatim(std::string_view bytes) {
    for (char c : bytes) {
      if (c == '\n') {
        newline();
        continue;
      }
      if (at_line_start_) write_prefix();
      out_ += c;
    }
  }
  // Markup that opens something ("**", "## ", "`"): after the space that
  // separates it from earlier words.
  void open_markup(std::string_view markup) {
    begin_inline();
    out_ += markup;
  }
  // Markup that closes something: right after the last word, a pending
  // space stays pending.
  void close_markup(std::string_view markup) {
    if (at_line_start_) write_prefix();
    out_ += markup;
  }
  void newline() {
    trim_trailing_spaces();
    out_ += '\n';
    at_line_start_ = true;
    pending_space_ = false;
  }
  // Ends the current line (if any) and leaves `blank_lines` empty lines.
  void block_break(int blank_lines) {
    if (out_.empty()) return;
    if (!at_line_start_) newline();
    int have = 0;
    for (std::size_t i = out_.size(); i >= 2 && out_[i - 1] == '\n' && out_[i - 2] == '\n'; --i)
      ++have;
    for (; have < blank_lines; ++have)
      out_ += '\n';
    pending_space_ = false;
  }
  void push_prefix(std::string prefix) { prefixes_.push_back(std::move(prefix)); }
  // Also drops a list marker no line used (an empty <li>).
  void pop_prefix() {
    if (!prefixes_.empty()) prefixes_.pop_back();
    marker_.clear();
  }
  // The first line of a list item carries its marker in place of the indent.
  void set_marker(std::string marker) { marker_ = std::move(marker); }

  // Where the next inline content starts (after any prefix and separating
  // space), for a link's "[" inserted once its text is known.
  std::size_t inline_start() {
    begin_inline();
    return out_.size();
  }
  bool written_nothing_since(std::size_t position) const {
    for (std::size_t i = position; i < out_.size(); ++i) {
      if (!is_space(out_[i])) return false;
    }
    return true;
  }
  // Rebuilt rather than std::string::insert, which trips GCC 12's
  // -Wrestrict false positive (GCC bug 105329).
  void insert_at(std::size_t position, std::string_view bytes) {
    std::string joined;
    joined.reserve(out_.size() + bytes.size());
    joined.append(out_, 0, position).append(bytes).append(out_, position);
    out_ = std::move(joined);
  }

  std::string finish() {
    trim_trailing_spaces();
    while (!out_.empty() && out_.back() == '\n')
      out_.pop_back();
    return std::move(out_);
  }

 private:
  void begin_inline() {
    if (at_line_start_) {
      write_prefix();
    } else if (pending_space_ && !out_.empty() && out_.back() != ' ') {
      out_ += ' ';
    }
    pending_space_ = false;
  }
  void write_prefix() {
    for (std::size_t i = 0; i < prefixes_.size(); ++i)
      out_ += (i + 1 == prefixes_.size() && !marker_.empty()) ? marker_ : prefixes_[i];
    marker_.clear();
    at_line_start_ = false;
  }
  void trim_trailing_spaces() {
    while (!out_.empty() && out_.back() == ' ')
      out_.pop_back();
  }

  std::string out_;
  std::vector<std::string> prefixes_;
  std::string marker_;
  bool at_line_start_ = true;  // nothing, not even the prefix, on this line yet
  bool pending_space_ = false;
};

struct ListState {
  bool ordered = false;
  int next_number = 1;
};

struct TableState {
  int row = 0;
  int cells_in_row = 0;
  int cells_in_first_row = 0;
};

// What an element left open and must close on exit.
struct OpenElement {
  const xmlNode* node = nullptr;
  std::size_t start = 0;  // <a>: where its text starts in the output
  std::string href;       // <a>: the resolved link
  bool pops_prefix = false;
};

class Renderer {
 public:
  Renderer(TextStyle style, const std::string& base_url) : style_(style), base_url_(base_url) {}

  std::string render(const xmlNode* root) {
    // Iterative pre-order walk over children/next/parent pointers, so the
    // document's depth never reaches the stack.
    const xmlNode* node = root;
    while (node != nullptr) {
      const bool descend = enter(node);
      if (descend && node->children != nullptr) {
        node = node->children;
        continue;
      }
      if (descend) leave(node);
      // Climb until a node has a next sibling, leaving each element passed.
      while (node != nullptr && node != root && node->next == nullptr) {
        node = node->parent;
        if (node != nullptr) leave(node);
      }
      if (node == nullptr || node == root) break;
      node = node->next;
    }
    return writer_.finish();
  }

 private:
  bool markdown() const { return style_ == TextStyle::markdown; }

  // The Markdown that wraps an inline element's text, the same on both
  // sides; empty for other elements (and for <code> inside <pre>).
  std::string_view inline_markup(std::string_view name) const {
    if (name == "code") return preformatted_ == 0 ? "`" : "";
    if (name == "strong" || name == "b") return "**";
    if (name == "em" || name == "i") return "*";
    return "";
  }

  // Writes what opens `node`; false when its subtree is skipped.
  bool enter(const xmlNode* node) {
    if (node->type == XML_TEXT_NODE || node->type == XML_CDATA_SECTION_NODE) {
      const char* content = reinterpret_cast<const char*>(node->content);
      if (content == nullptr) return false;
      if (preformatted_ > 0) {
        writer_.verbatim(content);
      } else {
        writer_.text(content);
      }
      return false;
    }
    if (node->type != XML_ELEMENT_NODE && node->type != XML_DOCUMENT_NODE &&
        node->type != XML_HTML_DOCUMENT_NODE) {
      return false;
    }
    const std::string_view name = name_of(node);
    if (is_hidden(name)) return false;
    OpenElement open{node, 0, {}, false};
    if (is_paragraph_block(name)) writer_.block_break(1);
    if (is_line_block(name)) writer_.block_break(0);

    if (name.size() == 2 && name[0] == 'h' && name[1] >= '1' && name[1] <= '6') {
      if (markdown())
        writer_.open_markup(std::string(static_cast<std::size_t>(name[1] - '0'), '#') + " ");
    } else if (name == "br") {
      writer_.newline();
    } else if (name == "hr") {
      writer_.block_break(1);
      if (markdown()) writer_.open_markup("---");
      writer_.block_break(1);
    } else if (name == "pre") {
      if (markdown()) {
        writer_.open_markup("```");
        writer_.newline();
      }
      ++preformatted_;
    } else if (const std::string_view markup = inline_markup(name); !markup.empty()) {
      if (markdown()) writer_.open_markup(markup);
    } else if (name == "a") {
      open.href = resolve_http_url(base_url_, property(node, "href"));
      open.start = writer_.inline_start();
    } else if (name == "img") {
      const std::string alt = collapse_whitespace(property(node, "alt"));
      const std::string src = resolve_http_url(base_url_, property(node, "src"));
      if (markdown() && !src.empty()) {
        writer_.open_markup("![" + alt + "](" + src + ")");
      } else if (!alt.empty()) {
        writer_.text("[image: " + alt + "]");
      }
    } else if (name == "ul" || name == "ol") {
      lists_.push_back({name == "ol", 1});
    } else if (name == "li") {
      std::string marker = "- ";
      if (!lists_.empty() && lists_.back().ordered) {
        marker = std::to_string(lists_.back().next_number++) + ". ";
      }
      writer_.push_prefix(std::string(marker.size(), ' '));
      writer_.set_marker(marker);
      open.pops_prefix = true;
    } else if (name == "blockquote") {
      writer_.push_prefix(markdown() ? "> " : "  ");
      open.pops_prefix = true;
    } else if (name == "dd") {
      writer_.push_prefix("    ");
      open.pops_prefix = true;
    } else if (name == "table") {
      tables_.push_back({});
    } else if (name == "tr") {
      if (!tables_.empty()) tables_.back().cells_in_row = 0;
      if (markdown()) writer_.open_markup("|");
    } else if (name == "td" || name == "th") {
      if (!tables_.empty()) ++tables_.back().cells_in_row;
      const bool later_cell = !tables_.empty() && tables_.back().cells_in_row > 1;
      writer_.open_markup(markdown() ? " " : (later_cell ? " | " : ""));
    }
    if (node->children != nullptr) {
      open_.push_back(std::move(open));
    } else if (open.pops_prefix) {
      writer_.pop_prefix();
    }
    return true;
  }

  // Writes what closes `node` (an element entered with enter() == true).
  void leave(const xmlNode* node) {
    OpenElement open;
    if (!open_.empty() && open_.back().node == node) {
      open = std::move(open_.back());
      open_.pop_back();
    } else {
      open.node = node;
    }
    if (node->type != XML_ELEMENT_NODE) return;
    const std::string_view name = name_of(node);
    if (open.pops_prefix) writer_.pop_prefix();
    if (name == "pre") {
      --preformatted_;
      if (markdown()) {
        writer_.block_break(0);
        writer_.open_markup("```");
      }
    } else if (const std::string_view markup = inline_markup(name); !markup.empty()) {
      if (markdown()) writer_.close_markup(markup);
    } else if (name == "a") {
      if (markdown() && !open.href.empty() && !writer_.written_nothing_since(open.start)) {
        writer_.insert_at(open.start, "[");
        writer_.close_markup("](" + open.href + ")");
      }
    } else if (name == "ul" || name == "ol") {
      if (!lists_.empty()) lists_.pop_back();
    } else if (name == "td" || name == "th") {
      if (markdown()) writer_.close_markup(" |");
    } else if (name == "tr") {
      if (!tables_.empty()) {
        TableState& table = tables_.back();
        if (++table.row == 1) table.cells_in_first_row = table.cells_in_row;
        if (markdown() && table.row == 1 && table.cells_in_first_row > 0) {
          writer_.newline();
          std::string rule = "|";
          for (int i = 0; i < table.cells_in_first_row; ++i)
            rule += " --- |";
          writer_.open_markup(rule);
        }
      }
    } else if (name == "table") {
      if (!tables_.empty()) tables_.pop_back();
    }
    if (is_paragraph_block(name)) writer_.block_break(1);
    if (is_line_block(name)) writer_.block_break(0);
  }

  TextStyle style_;
  const std::string& base_url_;
  TextWriter writer_;
  std::vector<OpenElement> open_;
  std::vector<ListState> lists_;
  std::vector<TableState> tables_;
  int preformatted_ = 0;
};

// The first <title> in the document, found without recursion.
std::string find_title(const xmlNode* root) {
  const xmlNode* node = root;
  while (node != nullptr) {
    if (node->type == XML_ELEMENT_NODE && name_of(node) == "title") {
      xmlChar* content = xmlNodeGetContent(node);
      std::string title =
          content ? collapse_whitespace(reinterpret_cast<const char*>(content)) : "";
      xmlFree(content);
      return title;
    }
    if (node->children != nullptr) {
      node = node->children;
      continue;
    }
    while (node != nullptr && node != root && node->next == nullptr)
      node = node->parent;
    if (node == nullptr || node == root) break;
    node = node->next;
  }
  return {};
}

void init_libxml_once() {
  static const bool done = [] {
    xmlInitParser();
    return true;
  }();
  (void)done;
}

}  // namespace

PageText html_to_text(std::string_view html, std::string_view charset, TextStyle style,
                      const std::string& base_url) {
  init_libxml_once();
  PageText page;
  if (html.empty()) return page;
  const std::string encoding(charset);
  const int size = static_cast<int>(std::min<std::size_t>(html.size(), INT_MAX));
  std::unique_ptr<xmlDoc, DocDeleter> doc(htmlReadMemory(
      html.data(), size, base_url.c_str(), encoding.empty() ? nullptr : encoding.c_str(),
      HTML_PARSE_RECOVER | HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING | HTML_PARSE_NONET |
          HTML_PARSE_COMPACT));
  if (!doc) {
    page.text = to_lossy_utf8(html);
    return page;
  }
  const xmlNode* root = reinterpret_cast<const xmlNode*>(doc.get());
  page.title = to_lossy_utf8(find_title(root));
  Renderer renderer(style, base_url);
  page.text = to_lossy_utf8(renderer.render(root));
  return page;
}

}  // namespace loopr::fetch
