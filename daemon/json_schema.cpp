// The JSON Schema validator: a compiler from a schema document to a vector of
// nodes (one per subschema, children by index), and an evaluator that walks
// nodes and value together. See json_schema.hpp for what is supported.
//
// Why all of draft 7, when a catalog's schemas may use only the keywords of
// config::kSchemaKeywords (config/schema_check.hpp, the gate every input and
// output schema passes when the catalog is read, so nothing else reaches
// compile() in looprd): the validator is checked against the official
// JSON-Schema-Test-Suite file by file (tests/daemon/json_schema_suite_test.cpp
// fails when the suite has a file it does not run), and that is the evidence
// for the subset's own semantics too — integers written 1.0, exact
// comparisons across int64, uint64 and double, lengths in code points,
// ECMA-262 patterns, oneOf's exactly one — some of whose groups also use
// keywords outside the subset (properties.json and additionalProperties.json
// use patternProperties). Cutting the other keywords would change no verdict
// looprd gives (a schema using them is refused by the gate first) but would
// trade that evidence for a list of suite files to skip. What the rest
// costs: code that only the suite runs, and nothing at run time (compile()
// builds nodes only for the keywords a schema names). The gate, not this
// file, decides what catalogs may use; widening kSchemaKeywords needs no new
// validator.
#include "daemon/json_schema.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/edit_distance.hpp"
#include "common/regex.hpp"
#include "common/utf8.hpp"

namespace loopr::daemon {
namespace json_schema_detail {

using Json = nlohmann::json;
using NodeId = std::uint32_t;
constexpr NodeId kNoNode = std::numeric_limits<NodeId>::max();

// A schema nested deeper than this is refused at compile(); it bounds the
// compiler's recursion. Tool schemas are a few levels deep.
constexpr int kMaxSchemaDepth = 64;
// Shown names and values are cut to this many bytes in messages.
constexpr std::size_t kMaxShownBytes = 64;
// anyOf/oneOf failures are explained from at most this many alternatives.
constexpr std::size_t kMaxExplainedAlternatives = 8;
// enum values listed in a message.
constexpr std::size_t kMaxListedEnumValues = 8;

// Numbers are compared as long double: int64, uint64 and double all convert
// to it without loss when it has a 64-bit mantissa (x86-64, and aarch64's
// 113-bit one).
static_assert(std::numeric_limits<long double>::digits >= 64,
              "exact number comparison needs a long double with a 64-bit mantissa");

// ---------------------------------------------------------------------------
// Types

enum TypeBit : std::uint8_t {
  kNull = 1u << 0,
  kBoolean = 1u << 1,
  kObject = 1u << 2,
  kArray = 1u << 3,
  kNumber = 1u << 4,
  kString = 1u << 5,
  kInteger = 1u << 6,
};

struct TypeName {
  std::string_view name;     // as written in a schema
  std::uint8_t bit;          // TypeBit
  std::string_view article;  // as written in a message
};

// In the order messages list them.
constexpr TypeName kTypeNames[] = {
    {"string", kString, "a string"},
    {"number", kNumber, "a number"},
    {"integer", kInteger, "an integer"},
    {"boolean", kBoolean, "a boolean"},
    {"object", kObject, "an object"},
    {"array", kArray, "an array"},
    {"null", kNull, "null"},
};

bool is_integral(double x) {
  return std::isfinite(x) && std::trunc(x) == x;
}

bool type_matches(std::uint8_t allowed, const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return (allowed & kNull) != 0;
    case Json::value_t::boolean:
      return (allowed & kBoolean) != 0;
    case Json::value_t::object:
      return (allowed & kObject) != 0;
    case Json::value_t::array:
      return (allowed & kArray) != 0;
    case Json::value_t::string:
      return (allowed & kString) != 0;
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return (allowed & (kNumber | kInteger)) != 0;
    case Json::value_t::number_float:
      if ((allowed & kNumber) != 0) return true;
      return (allowed & kInteger) != 0 && is_integral(*value.get_ptr<const double*>());
    default:
      return false;
  }
}

// "a string", "an object", ... for the value's JSON type ("a number" for
// every number).
std::string_view type_article(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::object:
      return "an object";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float:
      return "a number";
    default:
      return "an unsupported value";
  }
}

// "a string", "a string or null", "a string, an array or null".
std::string describe_types(std::uint8_t allowed) {
  std::vector<std::string_view> names;
  for (const TypeName& type : kTypeNames) {
    if ((allowed & type.bit) != 0) names.push_back(type.article);
  }
  std::string text;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) text += i + 1 == names.size() ? " or " : ", ";
    text += names[i];
  }
  return text;
}

// ---------------------------------------------------------------------------
// Numbers

long double number_value(const Json& number) {
  if (const auto* u = number.get_ptr<const Json::number_unsigned_t*>()) {
    return static_cast<long double>(*u);
  }
  if (const auto* i = number.get_ptr<const Json::number_integer_t*>()) {
    return static_cast<long double>(*i);
  }
  return static_cast<long double>(*number.get_ptr<const Json::number_float_t*>());
}

double double_value(const Json& number) {
  return static_cast<double>(number_value(number));
}

// |n| of an integer JSON number.
std::uint64_t magnitude(const Json& integer) {
  if (const auto* u = integer.get_ptr<const Json::number_unsigned_t*>()) return *u;
  const std::int64_t i = *integer.get_ptr<const Json::number_integer_t*>();
  return i >= 0 ? static_cast<std::uint64_t>(i) : static_cast<std::uint64_t>(-(i + 1)) + 1;
}

// `divisor` is a number > 0 (checked at compile).
bool is_multiple_of(const Json& value, const Json& divisor) {
  if (value.is_number_integer() && divisor.is_number_integer()) {
    return magnitude(value) % magnitude(divisor) == 0;
  }
  const double quotient = double_value(value) / double_value(divisor);
  if (!std::isfinite(quotient)) return false;
  return std::fabs(quotient - std::nearbyint(quotient)) <= 1e-12 * std::fabs(quotient);
}

// ---------------------------------------------------------------------------
// Equality (enum, const, uniqueItems): numbers by value, so 1 == 1.0, and
// exactly, across int64, uint64 and double. Recursion is bounded by `budget`.

enum class Equality { equal, different, too_deep };

Equality compare_values(const Json& a, const Json& b, int budget) {
  if (a.is_number() && b.is_number()) {
    return number_value(a) == number_value(b) ? Equality::equal : Equality::different;
  }
  if (a.type() != b.type()) return Equality::different;
  switch (a.type()) {
    case Json::value_t::array: {
      const auto& x = *a.get_ptr<const Json::array_t*>();
      const auto& y = *b.get_ptr<const Json::array_t*>();
      if (x.size() != y.size()) return Equality::different;
      if (budget <= 0) return Equality::too_deep;
      for (std::size_t i = 0; i < x.size(); ++i) {
        const Equality e = compare_values(x[i], y[i], budget - 1);
        if (e != Equality::equal) return e;
      }
      return Equality::equal;
    }
    case Json::value_t::object: {
      const auto& x = *a.get_ptr<const Json::object_t*>();
      const auto& y = *b.get_ptr<const Json::object_t*>();
      if (x.size() != y.size()) return Equality::different;
      if (budget <= 0) return Equality::too_deep;
      // Both maps are sorted by key: walk them side by side.
      for (auto i = x.begin(), j = y.begin(); i != x.end(); ++i, ++j) {
        if (i->first != j->first) return Equality::different;
        const Equality e = compare_values(i->second, j->second, budget - 1);
        if (e != Equality::equal) return e;
      }
      return Equality::equal;
    }
    default:
      return a == b ? Equality::equal : Equality::different;
  }
}

// A hash that agrees with compare_values(): equal values hash alike. It looks
// at most `levels` deep (so it costs at most what comparing would).
std::size_t hash_value(const Json& value, int levels) {
  constexpr std::size_t kMix = 0x9e3779b97f4a7c15ull;
  auto combine = [](std::size_t seed, std::size_t h) {
    return seed ^ (h + kMix + (seed << 6) + (seed >> 2));
  };
  if (value.is_number()) {
    const double d = double_value(value);
    return std::hash<double>{}(d == 0 ? 0.0 : d);
  }
  std::size_t seed = static_cast<std::size_t>(value.type());
  switch (value.type()) {
    case Json::value_t::string:
      return combine(seed, std::hash<std::string>{}(*value.get_ptr<const std::string*>()));
    case Json::value_t::boolean:
      return combine(seed, *value.get_ptr<const bool*>() ? 1u : 2u);
    case Json::value_t::array:
      seed = combine(seed, value.size());
      if (levels > 0) {
        for (const Json& item : value)
          seed = combine(seed, hash_value(item, levels - 1));
      }
      return seed;
    case Json::value_t::object:
      seed = combine(seed, value.size());
      if (levels > 0) {
        for (const auto& [key, member] : *value.get_ptr<const Json::object_t*>()) {
          seed = combine(seed, std::hash<std::string>{}(key));
          seed = combine(seed, hash_value(member, levels - 1));
        }
      }
      return seed;
    default:
      return seed;
  }
}

// ---------------------------------------------------------------------------
// Text for messages

std::string shorten(std::string_view text) {
  if (text.size() <= kMaxShownBytes) return std::string(text);
  return std::string(text.substr(0, utf8_safe_prefix(text, kMaxShownBytes))) + "...";
}

std::string dump(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// A scalar as JSON text (strings shortened); a container by its type.
std::string show_value(const Json& value) {
  if (value.is_string()) return dump(Json(shorten(*value.get_ptr<const std::string*>())));
  if (value.is_object() || value.is_array()) return std::string(type_article(value));
  return dump(value);
}

std::string show_name(std::string_view name) {
  return "'" + shorten(name) + "'";
}

std::string plural(std::uint64_t count, std::string_view noun) {
  return std::to_string(count) + " " + std::string(noun) + (count == 1 ? "" : "s");
}

void append_pointer_token(std::string& pointer, std::string_view token) {
  pointer += '/';
  for (const char c : token) {
    if (c == '~') {
      pointer += "~0";
    } else if (c == '/') {
      pointer += "~1";
    } else {
      pointer += c;
    }
  }
}

std::size_t code_points(std::string_view text) {
  return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

// ---------------------------------------------------------------------------
// Regular expressions (pattern, patternProperties)

// Patterns are common/regex.hpp's, in its ECMA-262-like syntax, searched
// under its work limits.
using MatchResult = RegexMatch;

// ---------------------------------------------------------------------------
// The compiled form

struct Dependency {
  std::string name;                   // when this field is present...
  std::vector<std::string> required;  // ...these must be too (array form),
  NodeId schema = kNoNode;            // ...or the object must match this (schema form)
};

struct ObjectRules {
  std::vector<std::pair<std::string, NodeId>> properties;          // sorted by name
  std::vector<std::pair<std::size_t, NodeId>> pattern_properties;  // regex index, schema
  NodeId additional = kNoNode;
  NodeId property_names = kNoNode;
  std::vector<std::string> required;
  std::vector<Dependency> dependencies;
  std::optional<std::uint64_t> min_properties;
  std::optional<std::uint64_t> max_properties;
  std::string allowed_names;  // "limit, offset, path", for unknown-field messages

  NodeId property(std::string_view name) const {
    const auto it = std::lower_bound(
        properties.begin(), properties.end(), name,
        [](const std::pair<std::string, NodeId>& p, std::string_view n) { return p.first < n; });
    return it != properties.end() && it->first == name ? it->second : kNoNode;
  }
};

struct ArrayRules {
  NodeId items = kNoNode;                    // every item (schema form)
  std::optional<std::vector<NodeId>> tuple;  // item i (array form)
  NodeId additional_items = kNoNode;         // items past the tuple
  NodeId contains = kNoNode;
  std::optional<std::uint64_t> min_items;
  std::optional<std::uint64_t> max_items;
  bool unique_items = false;
};

struct NumberLimit {
  Json shown;  // the schema's number
  long double value = 0;
};

struct NumberRules {
  std::optional<NumberLimit> minimum;
  std::optional<NumberLimit> maximum;
  std::optional<NumberLimit> exclusive_minimum;
  std::optional<NumberLimit> exclusive_maximum;
  std::optional<Json> multiple_of;  // > 0
};

struct StringRules {
  std::optional<std::uint64_t> min_length;  // in code points
  std::optional<std::uint64_t> max_length;
  std::optional<std::size_t> pattern;  // regex index
};

enum class NodeKind {
  accept_all,  // true, {}, or only annotations
  reject_all,  // false
  ref,         // $ref: only `ref` applies
  checks,      // the rules below
};

struct Node {
  NodeKind kind = NodeKind::checks;
  NodeId ref = kNoNode;
  std::uint8_t types = 0;  // TypeBits; 0 when there is no "type"
  std::optional<std::vector<Json>> enum_values;
  std::optional<Json> const_value;
  std::optional<ObjectRules> object;
  std::optional<ArrayRules> array;
  std::optional<NumberRules> number;
  std::optional<StringRules> string;
  std::vector<NodeId> all_of;
  std::vector<NodeId> any_of;
  std::vector<NodeId> one_of;
  NodeId not_schema = kNoNode;
  NodeId if_schema = kNoNode;
  NodeId then_schema = kNoNode;
  NodeId else_schema = kNoNode;

  bool has_checks() const {
    return types != 0 || enum_values || const_value || object || array || number || string ||
           !all_of.empty() || !any_of.empty() || !one_of.empty() || not_schema != kNoNode ||
           (if_schema != kNoNode && (then_schema != kNoNode || else_schema != kNoNode));
  }
};

struct CompiledSchema {
  std::vector<Node> nodes;
  std::vector<Regex> regexes;
  NodeId root = 0;
};

// ---------------------------------------------------------------------------
// Compiler

constexpr std::string_view kSupportedKeywords =
    "type, enum, const, properties, required, additionalProperties, patternProperties, "
    "propertyNames, dependencies, minProperties, maxProperties, items, additionalItems, contains, "
    "minItems, maxItems, uniqueItems, minimum, maximum, exclusiveMinimum, exclusiveMaximum, "
    "multipleOf, minLength, maxLength, pattern, allOf, anyOf, oneOf, not, if, then, else, "
    "definitions, $ref; annotations: title, description, default, examples, $comment, readOnly, "
    "writeOnly, format, contentMediaType, contentEncoding, $schema, $id (root only)";

class Compiler {
 public:
  Result<std::shared_ptr<const CompiledSchema>> run(const Json& schema) {
    Result<NodeId> root = compile_schema(schema, "", 0);
    if (!root) return std::move(root).error();
    out_->root = *root;
    if (Result<void> refs = resolve_refs(); !refs) return std::move(refs).error();
    if (Result<void> cycles = refuse_cycles(); !cycles) return std::move(cycles).error();
    return std::shared_ptr<const CompiledSchema>(std::move(out_));
  }

 private:
  struct PendingRef {
    NodeId node;
    std::string text;     // the $ref value
    std::string pointer;  // of the schema holding it
  };

  static Error schema_error(const std::string& pointer, std::string_view keyword,
                            const std::string& what, std::string hint = {}) {
    Error error =
        make_error(errc::invalid_arguments,
                   (pointer.empty() ? std::string("/") : pointer) + ": " + what, std::move(hint));
    std::string keyword_pointer = pointer;
    if (!keyword.empty()) append_pointer_token(keyword_pointer, keyword);
    error.details = {{"pointer", keyword_pointer}, {"keyword", std::string(keyword)}};
    return error;
  }

  static Error keyword_error(const std::string& pointer, std::string_view keyword,
                             const std::string& must, const Json& got) {
    return schema_error(
        pointer, keyword,
        "'" + std::string(keyword) + "' must be " + must + ", got " + show_value(got));
  }

  NodeId add_node() {
    out_->nodes.emplace_back();
    return static_cast<NodeId>(out_->nodes.size() - 1);
  }

  Result<NodeId> compile_schema(const Json& schema, const std::string& pointer, int depth) {
    if (depth > kMaxSchemaDepth) {
      return schema_error(pointer, "",
                          "schemas nested more than " + std::to_string(kMaxSchemaDepth) +
                              " levels deep are not supported");
    }
    const NodeId id = add_node();
    locations_.emplace(pointer, id);
    pointers_.push_back(pointer);
    if (schema.is_boolean()) {
      out_->nodes[id].kind =
          *schema.get_ptr<const bool*>() ? NodeKind::accept_all : NodeKind::reject_all;
      return id;
    }
    if (!schema.is_object()) {
      return schema_error(pointer, "",
                          "a schema must be an object or a boolean, got " + show_value(schema));
    }
    Node node;
    for (const auto& [keyword, value] : schema.items()) {
      Result<void> done = compile_keyword(node, id, keyword, value, pointer, depth);
      if (!done) return std::move(done).error();
    }
    if (node.ref != kNoNode) {
      node.kind = NodeKind::ref;  // draft 7: keywords beside $ref are ignored
    } else if (!node.has_checks()) {
      node.kind = NodeKind::accept_all;
    }
    if (node.object) finish_object_rules(*node.object);
    out_->nodes[id] = std::move(node);
    return id;
  }

  Result<NodeId> compile_child(const Json& schema, const std::string& pointer,
                               std::string_view keyword, int depth) {
    std::string child = pointer;
    append_pointer_token(child, keyword);
    return compile_schema(schema, child, depth + 1);
  }

  Result<NodeId> compile_member(const Json& schema, const std::string& pointer,
                                std::string_view keyword, std::string_view member, int depth) {
    std::string child = pointer;
    append_pointer_token(child, keyword);
    append_pointer_token(child, member);
    return compile_schema(schema, child, depth + 1);
  }

  Result<std::vector<NodeId>> compile_list(const Json& value, const std::string& pointer,
                                           std::string_view keyword, int depth) {
    if (!value.is_array() || value.empty()) {
      return keyword_error(pointer, keyword, "a non-empty array of schemas", value);
    }
    std::vector<NodeId> ids;
    for (std::size_t i = 0; i < value.size(); ++i) {
      Result<NodeId> id = compile_member(value[i], pointer, keyword, std::to_string(i), depth);
      if (!id) return std::move(id).error();
      ids.push_back(*id);
    }
    return ids;
  }

  Result<std::size_t> compile_regex(const std::string& source, const std::string& pointer,
                                    std::string_view keyword) {
    Result<Regex> regex = Regex::compile(source, RegexSyntax::ecmascript);
    if (!regex) {
      return schema_error(pointer, keyword,
                          "'" + std::string(keyword) + "': invalid regular expression " +
                              dump(Json(shorten(source))) + " " + regex.error().message,
                          "write the pattern in ECMA-262 / PCRE2 syntax");
    }
    out_->regexes.push_back(std::move(regex).value());
    return out_->regexes.size() - 1;
  }

  static Result<std::uint64_t> count_value(const Json& value, const std::string& pointer,
                                           std::string_view keyword) {
    if (value.is_number_unsigned()) return *value.get_ptr<const Json::number_unsigned_t*>();
    if (value.is_number_integer() && *value.get_ptr<const Json::number_integer_t*>() >= 0) {
      return static_cast<std::uint64_t>(*value.get_ptr<const Json::number_integer_t*>());
    }
    if (value.is_number_float()) {
      const double d = *value.get_ptr<const double*>();
      if (is_integral(d) && d >= 0) {
        return d >= 18446744073709551615.0 ? std::numeric_limits<std::uint64_t>::max()
                                           : static_cast<std::uint64_t>(d);
      }
    }
    return keyword_error(pointer, keyword, "a non-negative integer", value);
  }

  static Result<NumberLimit> limit_value(const Json& value, const std::string& pointer,
                                         std::string_view keyword) {
    if (!value.is_number() || (value.is_number_float() && !std::isfinite(double_value(value)))) {
      std::string must = "a number";
      if (value.is_boolean()) {
        must += " (the boolean form of draft 4 is not supported: write \"" + std::string(keyword) +
                "\": N instead of the inclusive limit)";
      }
      return keyword_error(pointer, keyword, must, value);
    }
    return NumberLimit{value, number_value(value)};
  }

  static Result<std::vector<std::string>> name_list(const Json& value, const std::string& pointer,
                                                    std::string_view keyword) {
    if (!value.is_array()) return keyword_error(pointer, keyword, "an array of names", value);
    std::vector<std::string> names;
    for (const Json& name : value) {
      if (!name.is_string()) return keyword_error(pointer, keyword, "an array of names", name);
      const std::string& text = *name.get_ptr<const std::string*>();
      if (std::find(names.begin(), names.end(), text) != names.end()) {
        return schema_error(pointer, keyword,
                            "'" + std::string(keyword) + "' names " + show_name(text) + " twice");
      }
      names.push_back(text);
    }
    return names;
  }

  static void finish_object_rules(ObjectRules& rules) {
    std::sort(rules.properties.begin(), rules.properties.end());
    std::string names;
    for (const auto& [name, schema] : rules.properties) {
      names += (names.empty() ? "" : ", ") + shorten(name);
    }
    rules.allowed_names = std::move(names);
  }

  Result<void> compile_keyword(Node& node, NodeId id, const std::string& keyword, const Json& value,
                               const std::string& pointer, int depth) {
    // Applicators that take one schema.
    const std::pair<std::string_view, NodeId*> single_schema[] = {
        {"not", &node.not_schema},
        {"if", &node.if_schema},
        {"then", &node.then_schema},
        {"else", &node.else_schema},
    };
    for (const auto& [name, slot] : single_schema) {
      if (keyword != name) continue;
      Result<NodeId> child = compile_child(value, pointer, keyword, depth);
      if (!child) return std::move(child).error();
      *slot = *child;
      return {};
    }
    if (keyword == "allOf" || keyword == "anyOf" || keyword == "oneOf") {
      Result<std::vector<NodeId>> list = compile_list(value, pointer, keyword, depth);
      if (!list) return std::move(list).error();
      (keyword == "allOf"   ? node.all_of
       : keyword == "anyOf" ? node.any_of
                            : node.one_of) = std::move(list).value();
      return {};
    }

    if (keyword == "type") return compile_type(node, value, pointer);
    if (keyword == "enum") {
      if (!value.is_array()) return keyword_error(pointer, keyword, "an array of values", value);
      node.enum_values = *value.get_ptr<const Json::array_t*>();
      return {};
    }
    if (keyword == "const") {
      node.const_value = value;
      return {};
    }

    if (keyword == "properties" || keyword == "patternProperties" || keyword == "definitions") {
      if (!value.is_object()) {
        return keyword_error(pointer, keyword, "an object whose values are schemas", value);
      }
      for (const auto& [name, member] : value.items()) {
        Result<NodeId> child = compile_member(member, pointer, keyword, name, depth);
        if (!child) return std::move(child).error();
        if (keyword == "properties") {
          object_rules(node).properties.emplace_back(name, *child);
        } else if (keyword == "patternProperties") {
          Result<std::size_t> regex = compile_regex(name, pointer, keyword);
          if (!regex) return std::move(regex).error();
          object_rules(node).pattern_properties.emplace_back(*regex, *child);
        }
      }
      return {};
    }
    if (keyword == "additionalProperties" || keyword == "propertyNames") {
      Result<NodeId> child = compile_child(value, pointer, keyword, depth);
      if (!child) return std::move(child).error();
      (keyword == "additionalProperties" ? object_rules(node).additional
                                         : object_rules(node).property_names) = *child;
      return {};
    }
    if (keyword == "required") {
      Result<std::vector<std::string>> names = name_list(value, pointer, keyword);
      if (!names) return std::move(names).error();
      object_rules(node).required = std::move(names).value();
      return {};
    }
    if (keyword == "dependencies") return compile_dependencies(node, value, pointer, depth);

    if (keyword == "items") {
      if (value.is_array()) {
        std::vector<NodeId> tuple;
        for (std::size_t i = 0; i < value.size(); ++i) {
          Result<NodeId> child =
              compile_member(value[i], pointer, keyword, std::to_string(i), depth);
          if (!child) return std::move(child).error();
          tuple.push_back(*child);
        }
        array_rules(node).tuple = std::move(tuple);
        return {};
      }
      Result<NodeId> child = compile_child(value, pointer, keyword, depth);
      if (!child) return std::move(child).error();
      array_rules(node).items = *child;
      return {};
    }
    if (keyword == "additionalItems" || keyword == "contains") {
      Result<NodeId> child = compile_child(value, pointer, keyword, depth);
      if (!child) return std::move(child).error();
      (keyword == "contains" ? array_rules(node).contains : array_rules(node).additional_items) =
          *child;
      return {};
    }
    if (keyword == "uniqueItems") {
      if (!value.is_boolean()) return keyword_error(pointer, keyword, "a boolean", value);
      if (*value.get_ptr<const bool*>()) array_rules(node).unique_items = true;
      return {};
    }

    if (std::optional<std::uint64_t>* slot = count_slot(node, keyword)) {
      Result<std::uint64_t> count = count_value(value, pointer, keyword);
      if (!count) return std::move(count).error();
      *slot = *count;
      return {};
    }

    if (keyword == "minimum" || keyword == "maximum" || keyword == "exclusiveMinimum" ||
        keyword == "exclusiveMaximum") {
      Result<NumberLimit> limit = limit_value(value, pointer, keyword);
      if (!limit) return std::move(limit).error();
      NumberRules& rules = number_rules(node);
      (keyword == "minimum"            ? rules.minimum
       : keyword == "maximum"          ? rules.maximum
       : keyword == "exclusiveMinimum" ? rules.exclusive_minimum
                                       : rules.exclusive_maximum) = std::move(limit).value();
      return {};
    }
    if (keyword == "multipleOf") {
      if (!value.is_number() || !(number_value(value) > 0) || !std::isfinite(double_value(value))) {
        return keyword_error(pointer, keyword, "a number greater than 0", value);
      }
      number_rules(node).multiple_of = value;
      return {};
    }
    if (keyword == "pattern") {
      if (!value.is_string()) return keyword_error(pointer, keyword, "a string", value);
      Result<std::size_t> regex =
          compile_regex(*value.get_ptr<const std::string*>(), pointer, keyword);
      if (!regex) return std::move(regex).error();
      string_rules(node).pattern = *regex;
      return {};
    }

    if (keyword == "$ref") {
      if (!value.is_string()) return keyword_error(pointer, keyword, "a string", value);
      pending_refs_.push_back({id, *value.get_ptr<const std::string*>(), pointer});
      node.ref = id;  // marks the node as a $ref; resolve_refs() sets the target
      return {};
    }
    if (keyword == "$id") {
      if (!value.is_string()) return keyword_error(pointer, keyword, "a string", value);
      if (!pointer.empty()) {
        return schema_error(pointer, keyword,
                            "'$id' is only supported at the root (a base-URI change below it "
                            "is not supported)",
                            "remove the '$id' and refer to this schema by its JSON pointer");
      }
      return {};
    }
    return compile_annotation(keyword, value, pointer);
  }

  static Result<void> compile_annotation(const std::string& keyword, const Json& value,
                                         const std::string& pointer) {
    constexpr std::string_view kStringAnnotations[] = {
        "title",  "description",      "$comment",        "$schema",
        "format", "contentMediaType", "contentEncoding",
    };
    if (std::find(std::begin(kStringAnnotations), std::end(kStringAnnotations), keyword) !=
        std::end(kStringAnnotations)) {
      if (!value.is_string()) return keyword_error(pointer, keyword, "a string", value);
      return {};
    }
    if (keyword == "readOnly" || keyword == "writeOnly") {
      if (!value.is_boolean()) return keyword_error(pointer, keyword, "a boolean", value);
      return {};
    }
    if (keyword == "examples") {
      if (!value.is_array()) return keyword_error(pointer, keyword, "an array", value);
      return {};
    }
    if (keyword == "default") return {};
    return schema_error(pointer, keyword, "unsupported keyword " + show_name(keyword),
                        "use only these keywords: " + std::string(kSupportedKeywords));
  }

  static Result<void> compile_type(Node& node, const Json& value, const std::string& pointer) {
    auto bit_of = [](const Json& name) -> std::uint8_t {
      if (!name.is_string()) return 0;
      for (const TypeName& type : kTypeNames) {
        if (type.name == *name.get_ptr<const std::string*>()) return type.bit;
      }
      return 0;
    };
    const std::string must =
        "a type name (null, boolean, object, array, number, string, integer) or a non-empty "
        "array of distinct ones";
    if (value.is_string()) {
      node.types = bit_of(value);
      if (node.types == 0) return keyword_error(pointer, "type", must, value);
      return {};
    }
    if (!value.is_array() || value.empty()) return keyword_error(pointer, "type", must, value);
    for (const Json& name : value) {
      const std::uint8_t bit = bit_of(name);
      if (bit == 0 || (node.types & bit) != 0) return keyword_error(pointer, "type", must, name);
      node.types = static_cast<std::uint8_t>(node.types | bit);
    }
    return {};
  }

  Result<void> compile_dependencies(Node& node, const Json& value, const std::string& pointer,
                                    int depth) {
    if (!value.is_object()) {
      return keyword_error(pointer, "dependencies",
                           "an object whose values are schemas or arrays of names", value);
    }
    for (const auto& [name, dependency] : value.items()) {
      Dependency entry;
      entry.name = name;
      if (dependency.is_array()) {
        std::string at = pointer;
        append_pointer_token(at, "dependencies");
        Result<std::vector<std::string>> names = name_list(dependency, at, name);
        if (!names) return std::move(names).error();
        entry.required = std::move(names).value();
      } else {
        Result<NodeId> child = compile_member(dependency, pointer, "dependencies", name, depth);
        if (!child) return std::move(child).error();
        entry.schema = *child;
      }
      object_rules(node).dependencies.push_back(std::move(entry));
    }
    return {};
  }

  // Where minItems, maxLength, ... go; nullptr for other keywords.
  static std::optional<std::uint64_t>* count_slot(Node& node, std::string_view keyword) {
    if (keyword == "minProperties") return &object_rules(node).min_properties;
    if (keyword == "maxProperties") return &object_rules(node).max_properties;
    if (keyword == "minItems") return &array_rules(node).min_items;
    if (keyword == "maxItems") return &array_rules(node).max_items;
    if (keyword == "minLength") return &string_rules(node).min_length;
    if (keyword == "maxLength") return &string_rules(node).max_length;
    return nullptr;
  }

  static ObjectRules& object_rules(Node& node) {
    if (!node.object) node.object.emplace();
    return *node.object;
  }
  static ArrayRules& array_rules(Node& node) {
    if (!node.array) node.array.emplace();
    return *node.array;
  }
  static NumberRules& number_rules(Node& node) {
    if (!node.number) node.number.emplace();
    return *node.number;
  }
  static StringRules& string_rules(Node& node) {
    if (!node.string) node.string.emplace();
    return *node.string;
  }

  // "#/definitions/a%25b~1c" → "/definitions/a%b~1c": a JSON pointer in the
  // escaped form compile_schema() records locations with.
  static Result<std::string> local_pointer(const std::string& ref, const std::string& pointer) {
    const std::string hint =
        "refer to a schema inside this one, as \"#/definitions/NAME\"; copy schemas from other "
        "documents under \"definitions\"";
    if (ref.empty() || ref[0] != '#') {
      return schema_error(pointer, "$ref",
                          "$ref " + dump(Json(shorten(ref))) +
                              " points to another document; only references within this schema "
                              "are supported",
                          hint);
    }
    std::string decoded;
    for (std::size_t i = 1; i < ref.size(); ++i) {
      if (ref[i] != '%') {
        decoded += ref[i];
        continue;
      }
      auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
      };
      const int high = i + 2 < ref.size() ? hex(ref[i + 1]) : -1;
      const int low = i + 2 < ref.size() ? hex(ref[i + 2]) : -1;
      if (high < 0 || low < 0) {
        return schema_error(pointer, "$ref",
                            "$ref " + dump(Json(shorten(ref))) + " has a malformed %-escape");
      }
      decoded += static_cast<char>(high * 16 + low);
      i += 2;
    }
    if (!decoded.empty() && decoded[0] != '/') {
      return schema_error(pointer, "$ref",
                          "$ref " + dump(Json(shorten(ref))) +
                              " is a plain-name fragment; only JSON pointers (\"#/...\") are "
                              "supported",
                          hint);
    }
    for (std::size_t i = 0; i < decoded.size(); ++i) {
      if (decoded[i] == '~' &&
          (i + 1 == decoded.size() || (decoded[i + 1] != '0' && decoded[i + 1] != '1'))) {
        return schema_error(pointer, "$ref",
                            "$ref " + dump(Json(shorten(ref))) +
                                " has a '~' not followed by 0 or 1 (write ~0 for '~', ~1 for '/')");
      }
    }
    return decoded;
  }

  Result<void> resolve_refs() {
    for (const PendingRef& pending : pending_refs_) {
      Result<std::string> target = local_pointer(pending.text, pending.pointer);
      if (!target) return std::move(target).error();
      const auto found = locations_.find(*target);
      if (found == locations_.end()) {
        return schema_error(pending.pointer, "$ref",
                            "$ref " + dump(Json(shorten(pending.text))) +
                                " does not point at a schema in this document",
                            "point it at a subschema, e.g. \"#/definitions/NAME\"");
      }
      out_->nodes[pending.node].ref = found->second;
    }
    return {};
  }

  // The schemas a node applies to the same value (not to a part of it).
  std::vector<NodeId> same_value_edges(NodeId id) const {
    const Node& node = out_->nodes[id];
    std::vector<NodeId> edges;
    if (node.kind == NodeKind::ref) return {node.ref};
    if (node.kind != NodeKind::checks) return edges;
    edges.insert(edges.end(), node.all_of.begin(), node.all_of.end());
    edges.insert(edges.end(), node.any_of.begin(), node.any_of.end());
    edges.insert(edges.end(), node.one_of.begin(), node.one_of.end());
    if (node.not_schema != kNoNode) edges.push_back(node.not_schema);
    if (node.if_schema != kNoNode) {  // then and else apply only beside an if
      for (const NodeId child : {node.if_schema, node.then_schema, node.else_schema}) {
        if (child != kNoNode) edges.push_back(child);
      }
    }
    if (node.object) {
      for (const Dependency& dependency : node.object->dependencies) {
        if (dependency.schema != kNoNode) edges.push_back(dependency.schema);
      }
    }
    return edges;
  }

  // A subschema that reaches itself through $ref without descending into a
  // member or item would recurse forever on any value that gets there.
  Result<void> refuse_cycles() const {
    enum class Mark : std::uint8_t { unseen, open, done };
    const std::size_t count = out_->nodes.size();
    std::vector<Mark> marks(count, Mark::unseen);
    std::vector<std::vector<NodeId>> edges(count);
    for (std::size_t i = 0; i < count; ++i)
      edges[i] = same_value_edges(static_cast<NodeId>(i));
    for (std::size_t start = 0; start < count; ++start) {
      if (marks[start] != Mark::unseen) continue;
      std::vector<std::pair<NodeId, std::size_t>> stack;  // node, next edge
      stack.emplace_back(static_cast<NodeId>(start), 0);
      marks[start] = Mark::open;
      while (!stack.empty()) {
        auto& [node, next] = stack.back();
        if (next == edges[node].size()) {
          marks[node] = Mark::done;
          stack.pop_back();
          continue;
        }
        const NodeId child = edges[node][next++];
        if (marks[child] == Mark::open) {
          return schema_error(
              pointers_[node], out_->nodes[node].kind == NodeKind::ref ? "$ref" : "",
              "this schema refers back to " +
                  (pointers_[child].empty() ? std::string("the root") : pointers_[child]) +
                  " without descending into a member or item, which would "
                  "never end",
              "break the cycle of references");
        }
        if (marks[child] == Mark::unseen) {
          marks[child] = Mark::open;
          stack.emplace_back(child, 0);
        }
      }
    }
    return {};
  }

  std::shared_ptr<CompiledSchema> out_ = std::make_shared<CompiledSchema>();
  std::unordered_map<std::string, NodeId> locations_;  // JSON pointer -> node
  std::vector<std::string> pointers_;                  // node -> JSON pointer
  std::vector<PendingRef> pending_refs_;
};

// ---------------------------------------------------------------------------
// Evaluator

// Where the evaluator is in the value: a chain of links on the stack, from
// the innermost member or item up to the root (nullptr).
struct PathLink {
  const PathLink* parent = nullptr;
  std::string_view name;  // a member name, unless is_index
  std::size_t index = 0;  // an item index, if is_index
  bool is_index = false;
};

std::vector<const PathLink*> path_links(const PathLink* at) {
  std::vector<const PathLink*> links;
  for (; at != nullptr; at = at->parent)
    links.push_back(at);
  std::reverse(links.begin(), links.end());
  return links;
}

bool is_identifier(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// "edits[1].old_string", "[\"a b\"].c"; "" at the root.
std::string display_path(const PathLink* at) {
  std::string text;
  for (const PathLink* link : path_links(at)) {
    if (link->is_index) {
      text += "[" + std::to_string(link->index) + "]";
    } else if (is_identifier(link->name) && link->name.size() <= kMaxShownBytes) {
      text += (text.empty() ? "" : ".") + std::string(link->name);
    } else {
      text += "[" + dump(Json(shorten(link->name))) + "]";
    }
  }
  return text;
}

// "/edits/1/old_string"; "" at the root. Long names are shortened.
std::string pointer_path(const PathLink* at) {
  std::string pointer;
  for (const PathLink* link : path_links(at)) {
    append_pointer_token(pointer,
                         link->is_index ? std::to_string(link->index) : shorten(link->name));
  }
  return pointer;
}

std::size_t path_depth(const PathLink* at) {
  std::size_t depth = 0;
  for (; at != nullptr; at = at->parent)
    ++depth;
  return depth;
}

struct Issue {
  std::string pointer;  // of the value at fault (or of the missing field)
  std::string where;    // display path of the value the message is about; "" at the root
  std::string what;
  std::string hint;  // may be empty
  std::size_t depth = 0;

  std::string message() const { return where.empty() ? what : where + ": " + what; }
};

// Collects up to `capacity` issues; one more marks it truncated, and the
// evaluator stops as soon as it is.
class IssueSink {
 public:
  explicit IssueSink(std::size_t capacity) : capacity_(capacity) {}

  // An issue with the value at `at`.
  void add(const PathLink* at, std::string what, std::string hint = {}) {
    add_issue(
        {pointer_path(at), display_path(at), std::move(what), std::move(hint), path_depth(at)});
  }
  // An issue with the member `field` of the object at `object` (which may be
  // missing): the message is about the object, the pointer names the field.
  void add_field(const PathLink* object, std::string_view field, std::string what,
                 std::string hint = {}) {
    const PathLink link{object, field, 0, false};
    add_issue({pointer_path(&link), display_path(object), std::move(what), std::move(hint),
               path_depth(&link)});
  }
  void add_issue(Issue issue) {
    if (issues_.size() == capacity_) {
      truncated_ = true;
      return;
    }
    issues_.push_back(std::move(issue));
  }

  bool truncated() const { return truncated_; }
  const std::vector<Issue>& issues() const { return issues_; }
  std::size_t deepest() const {
    std::size_t deepest = 0;
    for (const Issue& issue : issues_)
      deepest = std::max(deepest, issue.depth);
    return deepest;
  }

 private:
  std::size_t capacity_;
  std::vector<Issue> issues_;
  bool truncated_ = false;
};

// After a failure: whether evaluation should stop. Without a sink only the
// verdict is wanted; with one, until it is full.
bool stop(const IssueSink* sink) {
  return sink == nullptr || sink->truncated();
}

class Evaluator {
 public:
  explicit Evaluator(const CompiledSchema& schema) : schema_(schema) {}

  // Whether `value` (found at `at`) matches node `id`. Problems go to `sink`
  // when it is given; without one the first failure ends the walk.
  bool check(NodeId id, const Json& value, const PathLink* at, IssueSink* sink, int depth) const {
    const Node& node = schema_.nodes[id];
    switch (node.kind) {
      case NodeKind::accept_all:
        return true;
      case NodeKind::reject_all:
        if (sink) sink->add(at, "no value is allowed here");
        return false;
      case NodeKind::ref:
      case NodeKind::checks:
        break;
    }
    if (depth >= JsonSchema::kMaxEvaluationDepth) {
      if (sink) {
        sink->add(at, "nested too deeply to validate (more than " +
                          std::to_string(JsonSchema::kMaxEvaluationDepth) + " levels)");
      }
      return false;
    }
    if (node.kind == NodeKind::ref) return check(node.ref, value, at, sink, depth + 1);

    if (node.types != 0 && !type_matches(node.types, value)) {
      if (sink) sink->add(at, type_mismatch(node.types, value));
      return false;  // the other keywords would only repeat it
    }

    bool ok = true;
    auto failed = [&](auto&& what) {
      ok = false;
      if (sink) sink->add(at, what());
      return stop(sink);
    };
    const int budget = JsonSchema::kMaxEvaluationDepth - depth;

    if (node.const_value) {
      const Equality e = compare_values(value, *node.const_value, budget);
      if (e != Equality::equal &&
          failed([&] { return equality_failure(e, "must be " + show_value(*node.const_value)); })) {
        return false;
      }
    }
    if (node.enum_values) {
      Equality best = Equality::different;
      for (const Json& allowed : *node.enum_values) {
        const Equality e = compare_values(value, allowed, budget);
        if (e == Equality::equal || e == Equality::too_deep) {
          best = e;
          if (e == Equality::equal) break;
        }
      }
      if (best != Equality::equal &&
          failed([&] { return equality_failure(best, enum_failure(*node.enum_values, value)); })) {
        return false;
      }
    }

    if (node.object && value.is_object()) {
      if (!check_object(*node.object, *value.get_ptr<const Json::object_t*>(), value, at, sink,
                        depth)) {
        ok = false;
        if (stop(sink)) return false;
      }
    }
    if (node.array && value.is_array()) {
      if (!check_array(*node.array, *value.get_ptr<const Json::array_t*>(), at, sink, depth)) {
        ok = false;
        if (stop(sink)) return false;
      }
    }
    if (node.number && value.is_number()) {
      if (!check_number(*node.number, value, at, sink)) {
        ok = false;
        if (stop(sink)) return false;
      }
    }
    if (node.string && value.is_string()) {
      if (!check_string(*node.string, *value.get_ptr<const std::string*>(), at, sink)) {
        ok = false;
        if (stop(sink)) return false;
      }
    }

    for (const NodeId part : node.all_of) {
      if (!check(part, value, at, sink, depth + 1)) {
        ok = false;
        if (stop(sink)) return false;
      }
    }
    if (!node.any_of.empty()) {
      const bool any = std::any_of(node.any_of.begin(), node.any_of.end(), [&](NodeId option) {
        return check(option, value, at, nullptr, depth + 1);
      });
      if (!any) {
        ok = false;
        if (sink) explain_alternatives("anyOf", node.any_of, value, at, *sink, depth);
        if (stop(sink)) return false;
      }
    }
    if (!node.one_of.empty() && !check_one_of(node.one_of, value, at, sink, depth)) {
      ok = false;
      if (stop(sink)) return false;
    }
    if (node.not_schema != kNoNode && check(node.not_schema, value, at, nullptr, depth + 1) &&
        failed([] { return std::string("must not match the schema under 'not'"); })) {
      return false;
    }
    if (node.if_schema != kNoNode && (node.then_schema != kNoNode || node.else_schema != kNoNode)) {
      const NodeId branch = check(node.if_schema, value, at, nullptr, depth + 1) ? node.then_schema
                                                                                 : node.else_schema;
      if (branch != kNoNode && !check(branch, value, at, sink, depth + 1)) {
        ok = false;
        if (stop(sink)) return false;
      }
    }
    return ok;
  }

 private:
  static std::string type_mismatch(std::uint8_t allowed, const Json& value) {
    std::string text =
        "expected " + describe_types(allowed) + ", got " + std::string(type_article(value));
    if ((allowed & kInteger) != 0 && value.is_number_float()) {
      text += " with a fractional part (" + dump(value) + ")";
    }
    return text;
  }

  static std::string equality_failure(Equality result, std::string otherwise) {
    if (result == Equality::too_deep) {
      return "nested too deeply to compare (more than " +
             std::to_string(JsonSchema::kMaxEvaluationDepth) + " levels)";
    }
    return otherwise;
  }

  static std::string enum_failure(const std::vector<Json>& allowed, const Json& value) {
    if (allowed.empty()) return "no value is allowed here (the enum is empty)";
    std::string text = "must be one of ";
    for (std::size_t i = 0; i < allowed.size() && i < kMaxListedEnumValues; ++i) {
      text += (i == 0 ? "" : ", ") + show_value(allowed[i]);
    }
    if (allowed.size() > kMaxListedEnumValues) {
      text += ", ... (" + std::to_string(allowed.size()) + " values)";
    }
    return text + "; got " + show_value(value);
  }

  bool check_object(const ObjectRules& rules, const Json::object_t& object, const Json& value,
                    const PathLink* at, IssueSink* sink, int depth) const {
    bool ok = true;
    for (const auto& [name, member] : object) {
      const PathLink link{at, name, 0, false};
      bool declared = false;
      if (const NodeId property = rules.property(name); property != kNoNode) {
        declared = true;
        if (!check(property, member, &link, sink, depth + 1)) {
          ok = false;
          if (stop(sink)) return false;
        }
      }
      for (const auto& [regex_index, schema] : rules.pattern_properties) {
        const Regex& regex = schema_.regexes[regex_index];
        const MatchResult found = regex.search(name);
        if (found == MatchResult::gave_up) {
          ok = false;
          if (sink)
            sink->add_field(at, name, regex_gave_up("field name " + show_name(name), regex));
          if (stop(sink)) return false;
          continue;
        }
        if (found == MatchResult::no_match) continue;
        declared = true;
        if (!check(schema, member, &link, sink, depth + 1)) {
          ok = false;
          if (stop(sink)) return false;
        }
      }
      if (!declared && rules.additional != kNoNode) {
        if (schema_.nodes[rules.additional].kind == NodeKind::reject_all) {
          ok = false;
          if (sink) report_unknown_field(rules, at, name, *sink);
          if (stop(sink)) return false;
        } else if (!check(rules.additional, member, &link, sink, depth + 1)) {
          ok = false;
          if (stop(sink)) return false;
        }
      }
      if (rules.property_names != kNoNode) {
        const Json name_value(name);
        if (!check(rules.property_names, name_value, nullptr, nullptr, depth + 1)) {
          ok = false;
          if (sink) {
            IssueSink reason(1);
            check(rules.property_names, name_value, nullptr, &reason, depth + 1);
            sink->add_field(
                at, name,
                "invalid field name " + show_name(name) +
                    (reason.issues().empty() ? std::string() : ": " + reason.issues()[0].what));
          }
          if (stop(sink)) return false;
        }
      }
    }
    // After the members: an unknown field is often a misspelt required one.
    for (const std::string& name : rules.required) {
      if (object.find(name) != object.end()) continue;
      ok = false;
      if (sink) {
        sink->add_field(at, name, "missing required field " + show_name(name),
                        "add " + show_name(name));
      }
      if (stop(sink)) return false;
    }
    const std::uint64_t size = object.size();
    if (rules.min_properties && size < *rules.min_properties) {
      ok = false;
      if (sink) {
        sink->add(at, "must have at least " + plural(*rules.min_properties, "field") + ", got " +
                          std::to_string(size));
      }
      if (stop(sink)) return false;
    }
    if (rules.max_properties && size > *rules.max_properties) {
      ok = false;
      if (sink) {
        sink->add(at, "must have at most " + plural(*rules.max_properties, "field") + ", got " +
                          std::to_string(size));
      }
      if (stop(sink)) return false;
    }
    for (const Dependency& dependency : rules.dependencies) {
      if (object.find(dependency.name) == object.end()) continue;
      for (const std::string& needed : dependency.required) {
        if (object.find(needed) != object.end()) continue;
        ok = false;
        if (sink) {
          sink->add_field(at, needed,
                          "missing field " + show_name(needed) + ", required when " +
                              show_name(dependency.name) + " is present",
                          "add " + show_name(needed) + " or remove " + show_name(dependency.name));
        }
        if (stop(sink)) return false;
      }
      if (dependency.schema != kNoNode && !check(dependency.schema, value, at, sink, depth + 1)) {
        ok = false;
        if (stop(sink)) return false;
      }
    }
    return ok;
  }

  void report_unknown_field(const ObjectRules& rules, const PathLink* at, std::string_view name,
                            IssueSink& sink) const {
    std::string allowed = rules.allowed_names;
    for (const auto& pattern_property : rules.pattern_properties) {
      allowed += (allowed.empty() ? "" : ", ") + std::string("names matching /") +
                 shorten(schema_.regexes[pattern_property.first].source()) + "/";
    }
    std::string what = "unknown field " + show_name(name);
    what += allowed.empty() ? " (this object takes no fields)" : " (allowed: " + allowed + ")";
    std::string hint = "remove " + show_name(name);
    if (name.size() <= kMaxShownBytes) {
      std::size_t best = std::max<std::size_t>(1, name.size() / 3) + 1;
      std::string_view suggestion;
      for (const auto& property : rules.properties) {
        const std::size_t distance = edit_distance(name, property.first, best - 1);
        if (distance < best) {
          best = distance;
          suggestion = property.first;
        }
      }
      if (!suggestion.empty()) {
        hint = "rename " + show_name(name) + " to " + show_name(suggestion);
      }
    }
    sink.add_field(at, name, std::move(what), std::move(hint));
  }

  bool check_array(const ArrayRules& rules, const Json::array_t& items, const PathLink* at,
                   IssueSink* sink, int depth) const {
    bool ok = true;
    auto check_item = [&](NodeId schema, std::size_t i) {
      const PathLink link{at, {}, i, true};
      if (check(schema, items[i], &link, sink, depth + 1)) return true;
      ok = false;
      return !stop(sink);
    };
    if (rules.items != kNoNode && !rules.tuple) {
      for (std::size_t i = 0; i < items.size(); ++i) {
        if (!check_item(rules.items, i)) return false;
      }
    }
    if (rules.tuple) {
      const std::vector<NodeId>& tuple = *rules.tuple;
      for (std::size_t i = 0; i < items.size() && i < tuple.size(); ++i) {
        if (!check_item(tuple[i], i)) return false;
      }
      if (rules.additional_items != kNoNode && items.size() > tuple.size()) {
        if (schema_.nodes[rules.additional_items].kind == NodeKind::reject_all) {
          ok = false;
          if (sink) {
            sink->add(at, "must have at most " + plural(tuple.size(), "item") + ", got " +
                              std::to_string(items.size()));
          }
          if (stop(sink)) return false;
        } else {
          for (std::size_t i = tuple.size(); i < items.size(); ++i) {
            if (!check_item(rules.additional_items, i)) return false;
          }
        }
      }
    }
    if (rules.contains != kNoNode) {
      bool found = false;
      for (std::size_t i = 0; i < items.size() && !found; ++i) {
        const PathLink link{at, {}, i, true};
        found = check(rules.contains, items[i], &link, nullptr, depth + 1);
      }
      if (!found) {
        ok = false;
        if (sink)
          sink->add(at, "must contain at least one item that matches the 'contains' schema");
        if (stop(sink)) return false;
      }
    }
    const std::uint64_t size = items.size();
    if (rules.min_items && size < *rules.min_items) {
      ok = false;
      if (sink) {
        sink->add(at, "must have at least " + plural(*rules.min_items, "item") + ", got " +
                          std::to_string(size));
      }
      if (stop(sink)) return false;
    }
    if (rules.max_items && size > *rules.max_items) {
      ok = false;
      if (sink) {
        sink->add(at, "must have at most " + plural(*rules.max_items, "item") + ", got " +
                          std::to_string(size));
      }
      if (stop(sink)) return false;
    }
    if (rules.unique_items) {
      const auto [first, second, equality] = find_duplicate(items, depth);
      if (equality != Equality::different) {
        ok = false;
        if (sink) {
          sink->add(at, equality_failure(equality, "items must be unique, but [" +
                                                       std::to_string(first) + "] and [" +
                                                       std::to_string(second) + "] are equal"));
        }
        if (stop(sink)) return false;
      }
    }
    return ok;
  }

  struct Duplicate {
    std::size_t first = 0;
    std::size_t second = 0;
    Equality equality = Equality::different;  // equal: a duplicate; too_deep: could not tell
  };

  // The first pair of equal items (lowest first index, then lowest second),
  // found through hash buckets: O(n log n) unless hashes collide, where a long
  // array from the model must not cost n^2 comparisons.
  static Duplicate find_duplicate(const Json::array_t& items, int depth) {
    const int budget = JsonSchema::kMaxEvaluationDepth - depth;
    std::vector<std::pair<std::size_t, std::size_t>> hashed;  // hash, index
    hashed.reserve(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
      hashed.emplace_back(hash_value(items[i], budget), i);
    }
    std::sort(hashed.begin(), hashed.end());  // by hash, then by index
    Duplicate found;
    for (std::size_t begin = 0; begin < hashed.size();) {
      std::size_t end = begin + 1;
      while (end < hashed.size() && hashed[end].first == hashed[begin].first)
        ++end;
      // In a bucket, the first equal pair met has its lowest indices.
      bool bucket_done = false;
      for (std::size_t i = begin; i < end && !bucket_done; ++i) {
        for (std::size_t j = i + 1; j < end && !bucket_done; ++j) {
          const Equality e =
              compare_values(items[hashed[i].second], items[hashed[j].second], budget);
          if (e == Equality::different) continue;
          bucket_done = true;
          const std::size_t a = hashed[i].second;
          const std::size_t b = hashed[j].second;
          if (found.equality == Equality::different || a < found.first ||
              (a == found.first && b < found.second)) {
            found = {a, b, e};
          }
        }
      }
      begin = end;
    }
    return found;
  }

  static bool check_number(const NumberRules& rules, const Json& value, const PathLink* at,
                           IssueSink* sink) {
    bool ok = true;
    const long double x = number_value(value);
    struct Bound {
      const std::optional<NumberLimit>& limit;
      bool (*holds)(long double x, long double limit);
      std::string_view relation;
    };
    const Bound bounds[] = {
        {rules.minimum, [](long double v, long double l) { return v >= l; }, ">="},
        {rules.exclusive_minimum, [](long double v, long double l) { return v > l; }, ">"},
        {rules.maximum, [](long double v, long double l) { return v <= l; }, "<="},
        {rules.exclusive_maximum, [](long double v, long double l) { return v < l; }, "<"},
    };
    for (const Bound& bound : bounds) {
      if (!bound.limit || bound.holds(x, bound.limit->value)) continue;
      ok = false;
      if (sink) {
        sink->add(at, "must be " + std::string(bound.relation) + " " + dump(bound.limit->shown) +
                          ", got " + dump(value));
      }
      if (stop(sink)) return false;
    }
    if (rules.multiple_of && !is_multiple_of(value, *rules.multiple_of)) {
      ok = false;
      if (sink) {
        sink->add(at, "must be a multiple of " + dump(*rules.multiple_of) + ", got " + dump(value));
      }
      if (stop(sink)) return false;
    }
    return ok;
  }

  bool check_string(const StringRules& rules, const std::string& text, const PathLink* at,
                    IssueSink* sink) const {
    bool ok = true;
    if (rules.min_length || rules.max_length) {
      const std::uint64_t length = code_points(text);
      if (rules.min_length && length < *rules.min_length) {
        ok = false;
        if (sink) {
          sink->add(at, "must be at least " + plural(*rules.min_length, "character") +
                            " long, got " + std::to_string(length));
        }
        if (stop(sink)) return false;
      }
      if (rules.max_length && length > *rules.max_length) {
        ok = false;
        if (sink) {
          sink->add(at, "must be at most " + plural(*rules.max_length, "character") +
                            " long, got " + std::to_string(length));
        }
        if (stop(sink)) return false;
      }
    }
    if (rules.pattern) {
      const Regex& regex = schema_.regexes[*rules.pattern];
      const MatchResult found = regex.search(text);
      if (found != MatchResult::match) {
        ok = false;
        if (sink) {
          sink->add(at, found == MatchResult::no_match
                            ? "must match the pattern /" + shorten(regex.source()) + "/"
                            : regex_gave_up("the value", regex));
        }
        if (stop(sink)) return false;
      }
    }
    return ok;
  }

  static std::string regex_gave_up(const std::string& subject, const Regex& regex) {
    return subject + " could not be checked against the pattern /" + shorten(regex.source()) +
           "/: the regular expression engine hit its work limit";
  }

  bool check_one_of(const std::vector<NodeId>& options, const Json& value, const PathLink* at,
                    IssueSink* sink, int depth) const {
    std::size_t matches = 0;
    std::size_t matched[2] = {0, 0};  // the first two that match
    for (std::size_t i = 0; i < options.size() && matches < 2; ++i) {
      if (check(options[i], value, at, nullptr, depth + 1)) matched[matches++] = i;
    }
    if (matches == 1) return true;
    if (sink) {
      if (matches == 0) {
        explain_alternatives("oneOf", options, value, at, *sink, depth);
      } else {
        sink->add(at, "matches more than one of the alternatives in 'oneOf' (" +
                          std::to_string(matched[0] + 1) + " and " +
                          std::to_string(matched[1] + 1) + "); it must match exactly one");
      }
    }
    return false;
  }

  // No alternative matched. When one of them got further into the value than
  // the others, it is probably the one meant: report its problems. Otherwise
  // list why each failed.
  void explain_alternatives(std::string_view keyword, const std::vector<NodeId>& options,
                            const Json& value, const PathLink* at, IssueSink& sink,
                            int depth) const {
    const std::size_t here = path_depth(at);
    std::vector<IssueSink> attempts;
    for (std::size_t i = 0; i < options.size() && i < kMaxExplainedAlternatives; ++i) {
      attempts.emplace_back(JsonSchema::kMaxReportedErrors);
      check(options[i], value, at, &attempts.back(), depth + 1);
    }
    const IssueSink* best = nullptr;
    for (const IssueSink& attempt : attempts) {
      if (attempt.issues().empty()) continue;
      if (best == nullptr || attempt.deepest() > best->deepest() ||
          (attempt.deepest() == best->deepest() &&
           attempt.issues().size() < best->issues().size())) {
        best = &attempt;
      }
    }
    const bool clear_favourite =
        best != nullptr && best->deepest() > here &&
        std::count_if(attempts.begin(), attempts.end(), [&](const IssueSink& attempt) {
          return attempt.deepest() == best->deepest();
        }) == 1;
    if (clear_favourite) {
      for (const Issue& issue : best->issues()) {
        sink.add_issue(issue);
        if (sink.truncated()) return;
      }
      return;
    }
    std::string what = "matches none of the " + std::to_string(options.size()) +
                       " alternatives in '" + std::string(keyword) + "'";
    bool listed = false;
    for (std::size_t i = 0; i < attempts.size(); ++i) {
      if (attempts[i].issues().empty()) continue;
      const Issue& first = attempts[i].issues()[0];
      what += (listed ? "; (" : ": (") + std::to_string(i + 1) + ") " +
              (first.depth > here ? first.message() : first.what);
      listed = true;
    }
    sink.add(at, std::move(what));
  }

  const CompiledSchema& schema_;
};

}  // namespace json_schema_detail

using json_schema_detail::CompiledSchema;
using json_schema_detail::Compiler;
using json_schema_detail::Evaluator;
using json_schema_detail::IssueSink;

JsonSchema::JsonSchema(std::shared_ptr<const CompiledSchema> compiled)
    : compiled_(std::move(compiled)) {}

Result<JsonSchema> JsonSchema::compile(const nlohmann::json& schema) {
  Compiler compiler;
  Result<std::shared_ptr<const CompiledSchema>> compiled = compiler.run(schema);
  if (!compiled) return std::move(compiled).error();
  return JsonSchema(std::move(compiled).value());
}

Result<void> JsonSchema::validate(const nlohmann::json& instance) const {
  IssueSink sink(kMaxReportedErrors);
  const Evaluator evaluator(*compiled_);
  if (evaluator.check(compiled_->root, instance, nullptr, &sink, 0)) return {};
  if (sink.issues().empty()) sink.add(nullptr, "does not match the schema");

  std::string message;
  std::vector<std::string> hints;
  bool some_without_hint = false;
  nlohmann::json errors = nlohmann::json::array();
  for (const json_schema_detail::Issue& issue : sink.issues()) {
    const std::string text = issue.message();
    message += (message.empty() ? "" : "; ") + text;
    errors.push_back({{"path", issue.pointer}, {"message", text}});
    if (issue.hint.empty()) {
      some_without_hint = true;
    } else if (std::find(hints.begin(), hints.end(), issue.hint) == hints.end()) {
      hints.push_back(issue.hint);
    }
  }
  if (sink.truncated()) message += "; and more";
  std::string hint;
  for (const std::string& h : hints)
    hint += (hint.empty() ? "" : "; ") + h;
  if (some_without_hint || sink.truncated()) {
    hint += std::string(hint.empty() ? "fix" : "; fix") +
            " the fields named above to match the tool's input schema";
  }
  hint += ", then call the tool again";

  Error error = make_error(errc::invalid_arguments, std::move(message), std::move(hint));
  error.details = {{"errors", std::move(errors)}};
  if (sink.truncated()) error.details["truncated"] = true;
  return error;
}

}  // namespace loopr::daemon
