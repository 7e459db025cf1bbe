// Label selectors as apimachinery parses them (k8s.io/apimachinery/pkg/labels/selector.go: its
// Lexer, Parser and NewRequirement): equality-based terms (a=b, a==b, a!=b), set-based ones
// (a in (x,y), a notin (x), a, !a) and the numeric a>1, a<1, with the parser's messages.
#pragma once
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "test/fake/fake_names.hpp"
#include "test/fake/fake_requestinfo.hpp"

namespace fake {

namespace labels_detail {

enum class Tok { kEnd, kIdent, kComma, kNot, kEq, kEqEq, kNotEq, kGt, kLt, kIn, kNotIn, kOpen, kClose, kError /* not a token */ };

struct Item {
  Tok tok;
  std::string text;
};

inline bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
inline bool IsSpecial(char c) { return c == '=' || c == '!' || c == '(' || c == ')' || c == ',' || c == '>' || c == '<'; }

Tok SymbolToken(const std::string& s);

// Lexer.Lex over the whole text: identifiers (in and notin as keywords), the longest known
// symbol at each special character, then kEnd.
std::vector<Item> Lex(const std::string& s);

// validation.IsValidLabelValue's message, or "".
std::string LabelValueError(const std::string& v);

class Parser {
 public:
  explicit Parser(const std::string& text) : items_(Lex(text)) {}

  // Parser.parse: true with the requirements in `out`, or false with the message in `err`.
  bool Parse(std::vector<Requirement>& out, std::string& err);

 private:
  static bool Fail(std::string& err, const std::string& why) { return err = why, false; }
  // In the Values context "in" and "notin" are identifiers.
  Item AsValue(Item it) const;
  Item Peek() const { return AsValue(items_[pos_]); }
  Item Take() { return AsValue(TakeRaw()); }
  const Item& TakeRaw() { return items_[pos_ + 1 < items_.size() ? pos_++ : pos_]; }

  std::string ParseRequirement(Requirement& r);

  // parseValues: "(" a list ")", where empty places are "" values.
  std::string ParseValues(std::vector<std::string>& values);

  // parseExactValue: one identifier, or "" before a comma or the end.
  std::string ParseExactValue(std::vector<std::string>& values);

  std::vector<Item> items_;
  size_t pos_ = 0;
};

}  // namespace labels_detail

// labels.Parse: true with the requirements of `text` in `out`, or false with the parser's
// message in `err`.
bool ParseLabelSelector(const std::string& text, std::vector<Requirement>& out, std::string& err);

}  // namespace fake
