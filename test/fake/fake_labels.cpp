// The bodies of fake_labels.hpp (the contracts are there).
#include "test/fake/fake_labels.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

namespace fake {

namespace labels_detail {

Tok SymbolToken(const std::string& s) {
  if (s == ")") return Tok::kClose;
  if (s == "(") return Tok::kOpen;
  if (s == ",") return Tok::kComma;
  if (s == "!") return Tok::kNot;
  if (s == "=") return Tok::kEq;
  if (s == "==") return Tok::kEqEq;
  if (s == "!=") return Tok::kNotEq;
  if (s == ">") return Tok::kGt;
  if (s == "<") return Tok::kLt;
  return Tok::kError;
}

std::vector<Item> Lex(const std::string& s) {
  std::vector<Item> out;
  size_t i = 0;
  for (;;) {
    while (i < s.size() && IsSpace(s[i])) ++i;
    if (i == s.size()) break;
    if (!IsSpecial(s[i])) {
      size_t j = i;
      while (j < s.size() && !IsSpace(s[j]) && !IsSpecial(s[j])) ++j;
      std::string word = s.substr(i, j - i);
      out.push_back({word == "in" ? Tok::kIn : word == "notin" ? Tok::kNotIn : Tok::kIdent, word});
      i = j;
      continue;
    }
    // The longest run of special characters that is a token (each one alone is).
    std::string best(1, s[i]);
    for (size_t j = i + 1; j < s.size() && IsSpecial(s[j]) && SymbolToken(s.substr(i, j - i + 1)) != Tok::kError; ++j)
      best = s.substr(i, j - i + 1);
    out.push_back({SymbolToken(best), best});
    i += best.size();
  }
  out.push_back({Tok::kEnd, ""});
  return out;
}

std::string LabelValueError(const std::string& v) {
  std::string why;
  if (v.size() > 63) why = "must be no more than 63 characters";
  else if (!v.empty() && !names_detail::IsQualifiedNameText(v))
    why = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
          "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
          "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
  return why;
}

bool Parser::Parse(std::vector<Requirement>& out, std::string& err) {
  for (;;) {
    const Item& next = Peek();
    if (next.tok == Tok::kEnd) return true;
    if (next.tok != Tok::kIdent && next.tok != Tok::kNot)
      return Fail(err, "found '" + next.text + "', expected: !, identifier, or 'end of string'");
    Requirement r;
    if (std::string why = ParseRequirement(r); !why.empty()) return Fail(err, "unable to parse requirement: " + why);
    out.push_back(r);
    const Item& after = Take();
    if (after.tok == Tok::kEnd) return true;
    if (after.tok != Tok::kComma) return Fail(err, "found '" + after.text + "', expected: ',' or 'end of string'");
    const Item& more = Peek();
    if (more.tok != Tok::kIdent && more.tok != Tok::kNot)
      return Fail(err, "found '" + more.text + "', expected: identifier after ','");
  }
}

Item Parser::AsValue(Item it) const {
  if (it.tok == Tok::kIn || it.tok == Tok::kNotIn) it.tok = Tok::kIdent;
  return it;
}

std::string Parser::ParseRequirement(Requirement& r) {
  Item key = Take();
  bool negated = key.tok == Tok::kNot;
  if (negated) key = Take();
  if (key.tok != Tok::kIdent) return "found '" + key.text + "', expected: identifier";
  if (auto msgs = QualifiedNameErrors(key.text); !msgs.empty()) return "key: Invalid value: \"" + key.text + "\": " + msgs[0];
  r.key = key.text;
  Tok next = Peek().tok;
  if (negated || next == Tok::kEnd || next == Tok::kComma) {  // "!a=b": the caller finds the '='
    r.op = negated ? "!exists" : "exists";
    return "";
  }
  const Item& op = TakeRaw();
  std::string name;
  switch (op.tok) {
    case Tok::kIn: name = "in"; break;
    case Tok::kNotIn: name = "notin"; break;
    case Tok::kEq: case Tok::kEqEq: name = "="; break;
    case Tok::kNotEq: name = "!="; break;
    case Tok::kGt: name = "gt"; break;
    case Tok::kLt: name = "lt"; break;
    default: return "found '" + op.text + "', expected: in, notin, =, ==, !=, gt, lt";
  }
  std::string why = name == "in" || name == "notin" ? ParseValues(r.values) : ParseExactValue(r.values);
  if (!why.empty()) return why;
  r.op = name;
  std::sort(r.values.begin(), r.values.end());
  r.values.erase(std::unique(r.values.begin(), r.values.end()), r.values.end());
  r.value = r.values[0];
  if (name == "gt" || name == "lt") {
    char* end = nullptr;
    std::strtoll(r.values[0].c_str(), &end, 10);
    if (r.values[0].empty() || *end != '\0')
      return "values[0]: Invalid value: \"" + r.values[0] + "\": for 'Gt', 'Lt' operators, the value must be an integer";
    return "";
  }
  for (size_t i = 0; i < r.values.size(); ++i)
    if (std::string bad = LabelValueError(r.values[i]); !bad.empty())
      return "values[" + std::to_string(i) + "]: Invalid value: \"" + r.values[i] + "\": " + bad;
  return "";
}

std::string Parser::ParseValues(std::vector<std::string>& values) {
  Item open = Take();
  if (open.tok != Tok::kOpen) return "found '" + open.text + "' expected: '('";
  Item first = Peek();
  if (first.tok == Tok::kClose) {
    Take();
    values.push_back("");
    return "";
  }
  if (first.tok != Tok::kIdent && first.tok != Tok::kComma)
    return "found '" + first.text + "', expected: ',', ')' or identifier";
  for (;;) {  // parseIdentifiersList
    Item it = Take();
    if (it.tok == Tok::kIdent) {
      values.push_back(it.text);
      Item next = Peek();
      if (next.tok == Tok::kComma) continue;
      if (next.tok == Tok::kClose) break;
      return "found '" + next.text + "', expected: ',' or ')'";
    }
    if (it.tok != Tok::kComma) return "found '" + it.text + "', expected: ',', or identifier";
    if (values.empty()) values.push_back("");  // "(,"
    Tok next = Peek().tok;
    if (next == Tok::kClose) {
      values.push_back("");  // ",)"
      break;
    }
    if (next == Tok::kComma) {
      Take();
      values.push_back("");  // ",,"
    }
  }
  Item close = Take();
  if (close.tok != Tok::kClose) return "found '" + first.text + "', expected: ')'";
  return "";
}

std::string Parser::ParseExactValue(std::vector<std::string>& values) {
  Tok next = Peek().tok;
  if (next == Tok::kEnd || next == Tok::kComma) {
    values.push_back("");
    return "";
  }
  Item v = Take();
  if (v.tok != Tok::kIdent) return "found '" + v.text + "', expected: identifier";
  values.push_back(v.text);
  return "";
}

}  // namespace labels_detail

bool ParseLabelSelector(const std::string& text, std::vector<Requirement>& out, std::string& err) {
  out.clear();
  err.clear();
  return labels_detail::Parser(text).Parse(out, err);
}

}  // namespace fake
