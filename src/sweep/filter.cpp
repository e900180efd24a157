// SPDX-License-Identifier: MIT
// Recursive-descent parser and evaluator of sweep filters. Grammar, loosest first:
//   or := and ('||' and)* ; and := cmp ('&&' cmp)* ; cmp := sum (('=='|'!='|'<'|'<='|'>'|'>=') sum)?
//   sum := prod (('+'|'-') prod)* ; prod := unary (('*'|'/') unary)* ; unary := ('-'|'!') unary | atom
//   atom := number[unit] | 'string' | name | '(' or ')'
#include "trnsim/sweep/filter.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>

#include "trnsim/config/schema.hpp"
#include "trnsim/sweep/sweep.hpp"
#include "trnsim/units.hpp"

namespace trnsim::sweep {

bool numeric_value(const nlohmann::json& v, double& out) {
  if (v.is_number()) {
    out = v.get<double>();
    return true;
  }
  if (v.is_boolean()) {
    out = v.get<bool>() ? 1 : 0;
    return true;
  }
  if (!v.is_string()) return false;
  const std::string s = v.get<std::string>();
  // Each parser accepts only its own units, so at most one succeeds.
  const std::function<double(std::string_view)> parsers[] = {
      [](std::string_view t) { return parse_bandwidth(t).si; },
      [](std::string_view t) { return parse_bytes(t).si; },
      [](std::string_view t) { return parse_duration(t).si; },
      [](std::string_view t) { return parse_frequency(t).si; },
      [](std::string_view t) { return parse_power(t).si; },
      [](std::string_view t) { return parse_energy_per_bit(t).si; },
      [](std::string_view t) { return parse_energy(t).si; },
  };
  for (const auto& p : parsers) {
    try {
      out = p(s);
      return true;
    } catch (const UnitError&) {
    }
  }
  return false;
}

struct Filter::Node {
  // Nested rather than in the anonymous namespace: a member of a type with internal linkage is
  // refused (-Wsubobject-linkage) when this file is compiled as part of a unity batch.
  struct Value {
    bool is_num = true;
    double num = 0;
    std::string str;
  };
  enum class Kind { literal, variable, unary, binary } kind = Kind::literal;
  std::string op;  // for unary and binary
  Value value;     // for literal
  std::string name;
  std::unique_ptr<Node> a, b;
};

namespace {

using Node = Filter::Node;
using Value = Node::Value;

Value to_value(const nlohmann::json& j) {
  Value v;
  double d = 0;
  if (numeric_value(j, d)) {
    v.num = d;
  } else {
    v.is_num = false;
    v.str = j.is_string() ? j.get<std::string>() : j.dump();
  }
  return v;
}

class Parser {
 public:
  Parser(const std::string& text, const std::vector<std::string>& names, const std::string& where)
      : s_(text), names_(names), where_(where) {}

  std::unique_ptr<Node> parse() {
    auto n = parse_or();
    skip();
    if (pos_ < s_.size()) fail(fmt::format("unexpected \"{}\"", s_.substr(pos_)));
    return n;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw SweepError(fmt::format("{}: invalid filter \"{}\" at character {}: {}", where_, s_,
                                 pos_ + 1, what));
  }
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(std::string_view tok) {
    skip();
    if (s_.compare(pos_, tok.size(), tok) != 0) return false;
    // "<" must not swallow the first half of "<=", nor "!" of "!=".
    if ((tok == "<" || tok == ">" || tok == "!" || tok == "=") && pos_ + 1 < s_.size() &&
        s_[pos_ + 1] == '=') {
      return false;
    }
    pos_ += tok.size();
    return true;
  }
  static std::unique_ptr<Node> bin(std::string op, std::unique_ptr<Node> a, std::unique_ptr<Node> b) {
    auto n = std::make_unique<Node>();
    n->kind = Node::Kind::binary;
    n->op = std::move(op);
    n->a = std::move(a);
    n->b = std::move(b);
    return n;
  }
  std::unique_ptr<Node> parse_or() {
    auto n = parse_and();
    while (eat("||")) n = bin("||", std::move(n), parse_and());
    return n;
  }
  std::unique_ptr<Node> parse_and() {
    auto n = parse_cmp();
    while (eat("&&")) n = bin("&&", std::move(n), parse_cmp());
    return n;
  }
  std::unique_ptr<Node> parse_cmp() {
    auto n = parse_sum();
    for (const char* op : {"==", "!=", "<=", ">=", "<", ">"}) {
      if (eat(op)) return bin(op, std::move(n), parse_sum());
    }
    return n;
  }
  std::unique_ptr<Node> parse_sum() {
    auto n = parse_prod();
    for (;;) {
      if (eat("+")) n = bin("+", std::move(n), parse_prod());
      else if (eat("-")) n = bin("-", std::move(n), parse_prod());
      else return n;
    }
  }
  std::unique_ptr<Node> parse_prod() {
    auto n = parse_unary();
    for (;;) {
      if (eat("*")) n = bin("*", std::move(n), parse_unary());
      else if (eat("/")) n = bin("/", std::move(n), parse_unary());
      else return n;
    }
  }
  std::unique_ptr<Node> parse_unary() {
    for (const char* op : {"-", "!"}) {
      if (eat(op)) {
        auto n = std::make_unique<Node>();
        n->kind = Node::Kind::unary;
        n->op = op;
        n->a = parse_unary();
        return n;
      }
    }
    return parse_atom();
  }
  std::unique_ptr<Node> parse_atom() {
    skip();
    if (pos_ >= s_.size()) fail("expected a value, a name or \"(\"");
    auto n = std::make_unique<Node>();
    const char c = s_[pos_];
    if (c == '(') {
      ++pos_;
      n = parse_or();
      if (!eat(")")) fail("expected \")\"");
      return n;
    }
    if (c == '\'' || c == '"') {
      const auto end = s_.find(c, pos_ + 1);
      if (end == std::string::npos) fail("unterminated string");
      n->value = to_value(s_.substr(pos_ + 1, end - pos_ - 1));
      pos_ = end + 1;
      return n;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      std::size_t used = 0;
      double d = 0;
      try {
        d = std::stod(s_.substr(pos_), &used);
      } catch (const std::exception&) {
        fail("expected a number");
      }
      const std::size_t start = pos_;
      pos_ += used;
      // A unit follows the number without a space: 4TB/s, 256KiB, 150ns.
      if (pos_ < s_.size() && std::isalpha(static_cast<unsigned char>(s_[pos_]))) {
        while (pos_ < s_.size() &&
               (std::isalpha(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '/')) {
          ++pos_;
        }
        const std::string lit = s_.substr(start, pos_ - start);
        if (!numeric_value(lit, d)) fail(fmt::format("\"{}\" is not a quantity with a unit", lit));
      }
      n->value.num = d;
      return n;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const std::size_t start = pos_;
      while (pos_ < s_.size() &&
             (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) {
        ++pos_;
      }
      n->kind = Node::Kind::variable;
      n->name = s_.substr(start, pos_ - start);
      if (std::find(names_.begin(), names_.end(), n->name) == names_.end()) {
        const std::string near = config::nearest_key(n->name, names_);
        pos_ = start;
        fail(fmt::format("unknown axis name \"{}\"{}; the axes are {}", n->name,
                         near.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", near),
                         fmt::format("\"{}\"", fmt::join(names_, "\", \""))));
      }
      return n;
    }
    fail(fmt::format("unexpected \"{}\"", c));
  }

  const std::string& s_;
  const std::vector<std::string>& names_;
  const std::string& where_;
  std::size_t pos_ = 0;
};

Value eval(const Node& n, const std::map<std::string, nlohmann::json>& vars, const std::string& where) {
  auto num = [&](const Value& v, const Node& of) {
    if (!v.is_num) {
      throw SweepError(fmt::format("{}: filter: \"{}\" is not a number{}", where, v.str,
                                   of.kind == Node::Kind::variable ? " (axis " + of.name + ")" : ""));
    }
    return v.num;
  };
  switch (n.kind) {
    case Node::Kind::literal:
      return n.value;
    case Node::Kind::variable:
      return to_value(vars.at(n.name));
    case Node::Kind::unary: {
      const Value a = eval(*n.a, vars, where);
      return Value{true, n.op == "-" ? -num(a, *n.a) : double(num(a, *n.a) == 0), {}};
    }
    case Node::Kind::binary:
      break;
  }
  const Value a = eval(*n.a, vars, where);
  if (n.op == "&&" || n.op == "||") {
    const bool x = num(a, *n.a) != 0;
    if (n.op == "&&" && !x) return Value{true, 0, {}};
    if (n.op == "||" && x) return Value{true, 1, {}};
    return Value{true, double(num(eval(*n.b, vars, where), *n.b) != 0), {}};
  }
  const Value b = eval(*n.b, vars, where);
  if (n.op == "==" || n.op == "!=") {
    bool eq = false;
    if (a.is_num && b.is_num) {
      // Values with units round-trip through decimal text: compare to a relative 1e-12.
      eq = std::fabs(a.num - b.num) <= 1e-12 * std::max(std::fabs(a.num), std::fabs(b.num));
    } else {
      eq = !a.is_num && !b.is_num && a.str == b.str;
    }
    return Value{true, double(n.op == "==" ? eq : !eq), {}};
  }
  const double x = num(a, *n.a), y = num(b, *n.b);
  if (n.op == "<") return Value{true, double(x < y), {}};
  if (n.op == "<=") return Value{true, double(x <= y), {}};
  if (n.op == ">") return Value{true, double(x > y), {}};
  if (n.op == ">=") return Value{true, double(x >= y), {}};
  if (n.op == "+") return Value{true, x + y, {}};
  if (n.op == "-") return Value{true, x - y, {}};
  if (n.op == "*") return Value{true, x * y, {}};
  return Value{true, x / y, {}};
}

}  // namespace

Filter::Filter(const std::string& text, const std::vector<std::string>& names, std::string where)
    : where_(std::move(where)) {
  root_ = Parser(text, names, where_).parse();
}
Filter::~Filter() = default;
Filter::Filter(Filter&&) noexcept = default;

bool Filter::keeps(const std::map<std::string, nlohmann::json>& vars) const {
  const Value v = eval(*root_, vars, where_);
  if (!v.is_num) throw SweepError(fmt::format("{}: filter gives \"{}\", not true or false", where_, v.str));
  return v.num != 0;
}

}  // namespace trnsim::sweep
