// A YAML subset, enough for Kubernetes manifests and kubeconfig files, parsed into picojson
// values. Supported: block mappings and sequences (also sequences not indented under their
// key), flow collections ([a, b], {k: v}), plain / 'single' / "double" quoted scalars,
// | and > block scalars with -/+ chomping and indentation indicators, comments, "---" and
// "...". Plain scalars resolve as in YAML 1.2's core schema (null, bool, int, float, else
// string); quoted scalars are always strings. Refused with an error: anchors, aliases, tags,
// complex keys (?), directives (%), duplicate keys, .inf/.nan, invalid UTF-8, control
// characters, tabs in indentation, nesting deeper than kMaxDepth.
#pragma once
#include <picojson.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>
#include <vector>

#include "status.hpp"

namespace yaml_detail {

constexpr int kMaxDepth = 200;

inline bool IsBlank(char c) { return c == ' ' || c == '\t'; }
inline bool IsWsOrEnd(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\0'; }
inline bool IsFlowIndicator(char c) { return c == ',' || c == '[' || c == ']' || c == '{' || c == '}'; }

// Returns the offset of the first byte that is not valid UTF-8 or is a control character
// YAML forbids (all below 0x20 except tab and newline, and 0x7f); npos if none.
inline size_t FindInvalidByte(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    unsigned char c = s[i];
    if (c < 0x80) {
      if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f) return i;
      ++i;
      continue;
    }
    int len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
    if (len == 0 || c > 0xf4 || i + len > s.size()) return i;
    unsigned cp = c & (0x3f >> (len - 1));
    for (int k = 1; k < len; ++k) {
      unsigned char cc = s[i + k];
      if ((cc & 0xc0) != 0x80) return i;
      cp = (cp << 6) | (cc & 0x3f);
    }
    bool overlong = (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
    if (overlong || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
    i += len;
  }
  return std::string::npos;
}

inline void AppendUtf8(unsigned cp, std::string* out) {
  if (cp < 0x80) {
    *out += char(cp);
  } else if (cp < 0x800) {
    *out += char(0xc0 | (cp >> 6));
    *out += char(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    *out += char(0xe0 | (cp >> 12));
    *out += char(0x80 | ((cp >> 6) & 0x3f));
    *out += char(0x80 | (cp & 0x3f));
  } else {
    *out += char(0xf0 | (cp >> 18));
    *out += char(0x80 | ((cp >> 12) & 0x3f));
    *out += char(0x80 | ((cp >> 6) & 0x3f));
    *out += char(0x80 | (cp & 0x3f));
  }
}

// YAML 1.2 core schema numbers: [-+]?[0-9]+ and [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
inline bool IsDecimalNumber(const std::string& s) {
  size_t i = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
  auto digits = [&] { size_t n = 0; while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++n; return n; };
  size_t int_digits = digits();
  size_t frac_digits = 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    frac_digits = digits();
  }
  if (int_digits == 0 && frac_digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    if (digits() == 0) return false;
  }
  return i == s.size();
}

// 0x1F and 0o17 (core schema); false when not of that form.
inline bool ParseRadixInt(const std::string& s, double* out) {
  if (s.size() < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'o')) return false;
  int base = s[1] == 'x' ? 16 : 8;
  double v = 0;
  for (size_t i = 2; i < s.size(); ++i) {
    char c = s[i];
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : 99;
    if (d >= base) return false;
    v = v * base + d;
  }
  *out = v;
  return true;
}

class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  Result<std::vector<picojson::value>> Run() {
    std::vector<picojson::value> docs;
    if (!Prepare() || !ParseStream(&docs)) return Status::Invalid(error_);
    return docs;
  }

 private:
  struct Mark { size_t pos; int line; size_t line_start; };
  // Counts nesting on the way in and out of a node.
  struct DepthGuard {
    explicit DepthGuard(int* d) : d_(d) { ++*d_; }
    ~DepthGuard() { --*d_; }
    int* d_;
  };

  std::string s_;
  size_t pos_ = 0;
  int line_ = 1;
  size_t line_start_ = 0;
  int depth_ = 0;
  std::string error_;

  // --- cursor -------------------------------------------------------------------------
  char Peek(size_t k = 0) const { return pos_ + k < s_.size() ? s_[pos_ + k] : '\0'; }
  bool AtEnd() const { return pos_ >= s_.size(); }
  int Col() const { return int(pos_ - line_start_); }
  void Adv() {
    if (s_[pos_] == '\n') line_ += 1, line_start_ = pos_ + 1;
    ++pos_;
  }
  Mark Save() const { return {pos_, line_, line_start_}; }
  void Restore(const Mark& m) { pos_ = m.pos, line_ = m.line, line_start_ = m.line_start; }
  bool Fail(const std::string& message, int line = 0) {
    if (error_.empty()) error_ = "line " + std::to_string(line ? line : line_) + ": " + message;
    return false;
  }
  void SkipBlanks() { while (IsBlank(Peek())) Adv(); }
  bool AtComment() const { return Peek() == '#' && (pos_ == line_start_ || IsBlank(s_[pos_ - 1])); }
  void SkipComment() { if (AtComment()) while (!AtEnd() && Peek() != '\n') Adv(); }
  bool AtLineEnd() const { return AtEnd() || Peek() == '\n'; }
  bool AtDocMarker() const {
    return Col() == 0 && (s_.compare(pos_, 3, "---") == 0 || s_.compare(pos_, 3, "...") == 0) && IsWsOrEnd(Peek(3));
  }
  bool AtSeqEntry() const { return Peek() == '-' && IsWsOrEnd(Peek(1)); }
  // The character here, whole (the input is valid UTF-8), quoted for a message.
  std::string Quoted() const {
    unsigned char c = Peek();
    size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
    return "'" + s_.substr(pos_, len) + "'";
  }

  // Drops CRs of CRLF line ends and a leading BOM; refuses invalid bytes.
  bool Prepare() {
    std::string t;
    t.reserve(s_.size());
    for (size_t i = 0; i < s_.size(); ++i)
      if (!(s_[i] == '\r' && i + 1 < s_.size() && s_[i + 1] == '\n')) t += s_[i];
    s_.swap(t);
    if (s_.compare(0, 3, "\xEF\xBB\xBF") == 0) pos_ = line_start_ = 3;
    size_t bad = FindInvalidByte(s_);
    if (bad == std::string::npos) return true;
    int line = 1 + int(std::count(s_.begin(), s_.begin() + bad, '\n'));
    return Fail("invalid UTF-8 or control character", line);
  }

  // After a value: only blanks and a comment may follow on the line. Leaves pos at '\n'/end.
  bool ExpectLineEnd() {
    SkipBlanks();
    SkipComment();
    if (AtLineEnd()) return true;
    if (Peek() == ':') return Fail("unexpected ':' (quote a value that contains \": \")");
    return Fail("unexpected " + Quoted() + " after a value");
  }

  // Moves to the first character of the next line with content (skipping blank and comment
  // lines) and sets *col to its column, or -1 at the end or at a document marker (not
  // consumed). Call at a line end or at a line's first content character.
  bool NextContent(int* col) {
    for (;;) {
      while (IsWsOrEnd(Peek()) && !AtEnd()) Adv();
      if (AtComment()) { SkipComment(); continue; }
      break;
    }
    if (AtEnd() || AtDocMarker()) { *col = -1; return true; }
    for (size_t p = line_start_; p < pos_; ++p) {
      if (s_[p] == '\t') return Fail("tab character in indentation");
    }
    *col = Col();
    return true;
  }

  // --- documents and block collections ---------------------------------------------------
  bool ParseStream(std::vector<picojson::value>* docs) {
    bool have_node = false;  // the current document already has its node
    for (;;) {
      int col;
      if (!NextContent(&col)) return false;
      if (AtEnd()) return true;
      if (col < 0) {  // "---" or "..."
        bool start = Peek() == '-';
        for (int i = 0; i < 3; ++i) Adv();
        have_node = false;
        SkipBlanks();
        if (start && !AtLineEnd() && !AtComment()) {
          picojson::value v;
          if (!ParseInline(-1, &v)) return false;
          docs->push_back(std::move(v));
          have_node = true;
        }
        if (!ExpectLineEnd()) return false;
        continue;
      }
      if (have_node) return Fail("unexpected content after the document's end");
      if (col == 0 && Peek() == '%') return Fail("directives (%) are not supported");
      picojson::value v;
      if (!ParseNodeHere(col, -1, &v)) return false;
      docs->push_back(std::move(v));
      have_node = true;
    }
  }

  // Parses the node that starts at the current character (column col) and may continue on
  // lines indented more than parent.
  bool ParseNodeHere(int col, int parent, picojson::value* out) {
    DepthGuard guard(&depth_);
    if (depth_ > kMaxDepth) return Fail("nesting deeper than " + std::to_string(kMaxDepth) + " levels");
    if (AtSeqEntry()) return ParseSequence(col, out);
    size_t colon;
    if (LooksLikeKey(&colon)) return ParseMapping(col, out);
    return ParseInline(parent, out);
  }

  // A value that starts on a later line, indented more than parent; null if there is none.
  bool ParseBlockNode(int parent, picojson::value* out) {
    int col;
    if (!NextContent(&col)) return false;
    if (col <= parent) { *out = picojson::value(); return true; }
    return ParseNodeHere(col, parent, out);
  }

  bool ParseSequence(int indent, picojson::value* out) {
    picojson::array items;
    int col = indent;
    while (col == indent && AtSeqEntry()) {
      Adv();
      SkipBlanks();
      picojson::value item;
      if (AtLineEnd() || AtComment()) {
        SkipComment();
        if (!ParseBlockNode(indent, &item)) return false;
      } else if (!ParseNodeHere(Col(), indent, &item)) {
        return false;
      }
      items.push_back(std::move(item));
      if (!NextContent(&col)) return false;
    }
    if (col > indent) return Fail("bad indentation of a sequence entry");
    *out = picojson::value(std::move(items));
    return true;
  }

  // True when the current line holds "key: ..." from here on; *colon is the ':' of a plain key.
  bool LooksLikeKey(size_t* colon) const {
    char c = Peek();
    size_t p = pos_;
    if (c == '"' || c == '\'') {
      for (++p; p < s_.size() && s_[p] != '\n'; ++p) {
        if (c == '"' && s_[p] == '\\') { ++p; continue; }
        if (s_[p] == c && c == '\'' && p + 1 < s_.size() && s_[p + 1] == '\'') { ++p; continue; }
        if (s_[p] == c) break;
      }
      if (p >= s_.size() || s_[p] != c) return false;
      for (++p; p < s_.size() && IsBlank(s_[p]); ++p) {}
      return p < s_.size() && s_[p] == ':' && IsWsOrEnd(p + 1 < s_.size() ? s_[p + 1] : '\0');
    }
    if (IsFlowIndicator(c) || std::string("&*!|>%@`#").find(c) != std::string::npos) return false;
    for (; p < s_.size() && s_[p] != '\n'; ++p) {
      if (s_[p] == ':' && IsWsOrEnd(p + 1 < s_.size() ? s_[p + 1] : '\0')) { *colon = p; return true; }
      if (s_[p] == '#' && p > pos_ && IsBlank(s_[p - 1])) return false;
    }
    return false;
  }

  bool ParseKey(std::string* key) {
    size_t colon = 0;
    if (Peek() == '?' && IsWsOrEnd(Peek(1))) return Fail("complex keys (?) are not supported");
    if (!LooksLikeKey(&colon)) return Fail("expected \"key: value\" at this indentation");
    if (Peek() == '"' || Peek() == '\'') {
      if (!ParseQuoted(key)) return false;
      SkipBlanks();
    } else {
      if (colon == pos_) return Fail("empty keys are not supported");
      size_t end = colon;
      while (IsBlank(s_[end - 1])) --end;
      *key = s_.substr(pos_, end - pos_);
      while (pos_ < colon) Adv();
    }
    Adv();  // ':'
    return true;
  }

  bool ParseMapping(int indent, picojson::value* out) {
    picojson::object map;
    for (;;) {
      int key_line = line_;
      std::string key;
      if (!ParseKey(&key)) return false;
      if (map.count(key)) return Fail("duplicate key \"" + key + "\"", key_line);
      SkipBlanks();
      picojson::value value;
      if (AtLineEnd() || AtComment()) {
        SkipComment();
        int col;
        if (!NextContent(&col)) return false;
        // A sequence may sit at the key's own indentation ("key:\n- a").
        if (col > indent || (col == indent && AtSeqEntry())) {
          if (!ParseNodeHere(col, indent, &value)) return false;
        }
      } else if (AtSeqEntry()) {
        return Fail("a sequence cannot start on the same line as its key");
      } else if (!ParseInline(indent, &value)) {
        return false;
      }
      map[key] = std::move(value);
      int col;
      if (!NextContent(&col)) return false;
      if (col < indent) break;
      if (col > indent) return Fail("bad indentation of a mapping entry");
      if (AtSeqEntry()) return Fail("expected \"key: value\", found a sequence entry");
    }
    *out = picojson::value(std::move(map));
    return true;
  }

  // --- values on one line (that may continue on following lines) --------------------------
  // Parses a scalar, flow collection or block scalar that starts here; continuation lines
  // must be indented more than parent. Leaves pos at the '\n' (or end) of its last line.
  bool ParseInline(int parent, picojson::value* out) {
    char c = Peek();
    if (c == '|' || c == '>') return ParseBlockScalar(parent, out);
    if (!CheckNodeStart()) return false;
    if (c == '[' || c == '{') {
      if (!ParseFlow(out)) return false;
    } else if (c == '"' || c == '\'') {
      std::string text;
      if (!ParseQuoted(&text)) return false;
      *out = picojson::value(std::move(text));
    } else {
      std::string text;
      ParsePlain(parent, false, &text);
      if (!Resolve(text, out)) return false;
    }
    return ExpectLineEnd();
  }

  // Refuses the indicators this subset does not support, or that cannot start a node.
  bool CheckNodeStart() {
    char c = Peek();
    if (c == '&' || c == '*' || c == '!') return Fail("anchors (&), aliases (*) and tags (!) are not supported");
    if (c == '?' && IsWsOrEnd(Peek(1))) return Fail("complex keys (?) are not supported");
    if (c == '-' && IsWsOrEnd(Peek(1))) return Fail("a sequence entry is not allowed here");
    if (c == ':' && IsWsOrEnd(Peek(1))) return Fail("empty keys are not supported");
    if (c == '%' || c == '@' || c == '`') return Fail(std::string("a plain value cannot start with '") + c + "'; quote it");
    if (c == ',' || c == ']' || c == '}' || c == '#' || AtLineEnd()) return Fail(std::string("expected a value, found '") + (AtLineEnd() ? "end of line" : std::string(1, c)) + "'");
    return true;
  }

  // A plain scalar; in block context it continues on lines indented more than parent, in a
  // flow collection until a flow indicator. Line breaks fold to a space (empty lines to \n).
  void ParsePlain(int parent, bool flow, std::string* out) {
    for (;;) {
      size_t start = pos_;
      while (!AtLineEnd()) {
        char c = Peek();
        if (c == ':' && (IsWsOrEnd(Peek(1)) || (flow && IsFlowIndicator(Peek(1))))) break;
        if (c == '#' && pos_ > start && IsBlank(s_[pos_ - 1])) break;
        if (flow && IsFlowIndicator(c)) break;
        Adv();
      }
      size_t end = pos_;
      while (end > start && IsBlank(s_[end - 1])) --end;
      out->append(s_, start, end - start);
      if (AtEnd() || Peek() != '\n') return;
      Mark m = Save();
      int breaks = 0;
      Adv();
      for (;;) {
        SkipBlanks();
        if (Peek() != '\n') break;
        ++breaks;
        Adv();
      }
      char c = Peek();
      bool stop = AtEnd() || c == '#' || AtDocMarker() || (flow ? IsFlowIndicator(c) || c == ':' : Col() <= parent);
      if (stop) { Restore(m); return; }
      *out += breaks == 0 ? std::string(" ") : std::string(breaks, '\n');
    }
  }

  // 'single' or "double" quoted; may span lines (folded as in plain scalars).
  bool ParseQuoted(std::string* out) {
    char q = Peek();
    int start_line = line_;
    size_t keep = 0;  // escaped characters at the end of *out survive line folding
    Adv();
    for (;;) {
      if (AtEnd() || AtDocMarker()) return Fail("unterminated quoted string", start_line);
      char c = Peek();
      if (c == q && q == '\'' && Peek(1) == '\'') {
        *out += '\'';
        Adv(), Adv();
      } else if (c == q) {
        Adv();
        return true;
      } else if (c == '\\' && q == '"') {
        Adv();
        if (!ParseEscape(out)) return false;
        keep = out->size();
      } else if (c == '\n') {
        while (out->size() > keep && IsBlank(out->back())) out->pop_back();
        *out += FoldLineBreak();
      } else {
        *out += c;
        Adv();
      }
    }
  }

  // At a line break inside a quoted scalar: consumes it, empty lines and the next line's
  // indentation; returns what they fold to.
  std::string FoldLineBreak() {
    int breaks = 0;
    Adv();
    for (;;) {
      SkipBlanks();
      if (Peek() != '\n') break;
      ++breaks;
      Adv();
    }
    return breaks == 0 ? " " : std::string(breaks, '\n');
  }

  bool ReadHex(int digits, unsigned* cp) {
    *cp = 0;
    for (int i = 0; i < digits; ++i) {
      char c = Peek();
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) return Fail("invalid hex digit in escape");
      *cp = *cp * 16 + unsigned(d);
      Adv();
    }
    return true;
  }

  // After a backslash in a double-quoted scalar.
  bool ParseEscape(std::string* out) {
    static const std::string kFrom = "0abt\tnvfre \"/\\";
    static const std::string kTo = std::string("\0\a\b\t\t\n\v\f\r\x1b \"/\\", 14);
    char e = Peek();
    size_t k = kFrom.find(e);
    if (e != '\0' && k != std::string::npos) {
      *out += kTo[k];
      Adv();
      return true;
    }
    if (e == '\n') {  // escaped line break: joins the lines without a space
      std::string fold = FoldLineBreak();
      if (fold != " ") *out += fold;
      return true;
    }
    unsigned cp;
    if (e == 'N' || e == '_' || e == 'L' || e == 'P') {
      cp = e == 'N' ? 0x85 : e == '_' ? 0xa0 : e == 'L' ? 0x2028 : 0x2029;
      Adv();
    } else if (e == 'x' || e == 'u' || e == 'U') {
      Adv();
      if (!ReadHex(e == 'x' ? 2 : e == 'u' ? 4 : 8, &cp)) return false;
      if (cp >= 0xd800 && cp <= 0xdbff && Peek() == '\\' && Peek(1) == 'u') {  // JSON-style pair
        unsigned low;
        Adv(), Adv();
        if (!ReadHex(4, &low)) return false;
        if (low < 0xdc00 || low > 0xdfff) return Fail("invalid UTF-16 surrogate pair in escape");
        cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
      }
      if ((cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) return Fail("invalid code point in escape");
    } else {
      return Fail("invalid escape \\" + (AtLineEnd() ? std::string() : Quoted().substr(1, Quoted().size() - 2)));
    }
    AppendUtf8(cp, out);
    return true;
  }

  // | or > with optional chomping (-, +) and indentation (1-9) indicators.
  bool ParseBlockScalar(int parent, picojson::value* out) {
    bool folded = Peek() == '>';
    Adv();
    char chomp = ' ';
    int indent = -1;  // of the content; -1 until the first non-empty line
    for (int i = 0; i < 2; ++i) {
      char c = Peek();
      if ((c == '-' || c == '+') && chomp == ' ') chomp = c, Adv();
      else if (c >= '1' && c <= '9' && indent < 0) indent = (parent < 0 ? 0 : parent) + (c - '0'), Adv();
    }
    if (!ExpectLineEnd()) return false;
    std::vector<std::string> lines;  // without the indentation; "" for empty lines
    while (!AtEnd()) {
      Mark m = Save();
      Adv();  // '\n'
      if (AtEnd() || AtDocMarker()) { Restore(m); break; }
      while (Peek() == ' ') Adv();
      size_t rest = pos_;
      while (IsBlank(Peek())) Adv();
      bool empty = AtLineEnd();
      int spaces = int(rest - line_start_);
      if (empty && (indent < 0 || spaces <= indent)) { lines.emplace_back(); continue; }
      if (indent < 0 && spaces > parent) indent = spaces;
      if (indent < 0 || spaces < indent) { Restore(m); break; }
      while (!AtLineEnd()) Adv();
      lines.push_back(s_.substr(line_start_ + indent, pos_ - line_start_ - indent));
    }
    // A last text line at the very end of the input has no line break to keep.
    bool final_break = !(AtEnd() && s_.back() != '\n' && !lines.empty() && !lines.back().empty());
    *out = picojson::value(AssembleBlockScalar(lines, folded, chomp, final_break));
    return true;
  }

  static std::string AssembleBlockScalar(const std::vector<std::string>& lines, bool folded, char chomp,
                                         bool final_break) {
    size_t last = lines.size();  // last non-empty line
    while (last > 0 && lines[last - 1].empty()) --last;
    std::string out;
    int pending = 0;  // empty lines since the previous text line
    bool prev_normal = false, first = true;
    for (size_t i = 0; i < last; ++i) {
      const std::string& l = lines[i];
      if (l.empty()) { ++pending; continue; }
      bool more_indented = IsBlank(l[0]);
      if (first) out.append(pending, '\n');
      else if (folded && prev_normal && !more_indented) out += pending == 0 ? std::string(" ") : std::string(pending, '\n');
      else out.append(pending + 1, '\n');
      out += l;
      prev_normal = !more_indented, pending = 0, first = false;
    }
    size_t trailing = lines.size() - last;
    if (chomp == '+') out.append(last > 0 && final_break ? trailing + 1 : trailing, '\n');
    else if (chomp == ' ' && last > 0 && final_break) out += '\n';
    return out;
  }

  // --- flow collections ------------------------------------------------------------------
  bool SkipFlowSpace(int start_line) {
    for (;;) {
      while (IsWsOrEnd(Peek()) && !AtEnd()) Adv();
      if (AtComment()) { SkipComment(); continue; }
      if (AtEnd() || AtDocMarker()) return Fail("unterminated flow collection", start_line);
      return true;
    }
  }

  bool ParseFlowNode(picojson::value* out) {
    char c = Peek();
    if (c == '|' || c == '>') return Fail("block scalars are not allowed inside [ ] or { }");
    if (!CheckNodeStart()) return false;
    if (c == '[' || c == '{') return ParseFlow(out);
    std::string text;
    if (c == '"' || c == '\'') {
      if (!ParseQuoted(&text)) return false;
      *out = picojson::value(std::move(text));
      return true;
    }
    ParsePlain(-1, true, &text);
    return Resolve(text, out);
  }

  bool ParseFlow(picojson::value* out) {
    DepthGuard guard(&depth_);
    if (depth_ > kMaxDepth) return Fail("nesting deeper than " + std::to_string(kMaxDepth) + " levels");
    int start_line = line_;
    bool is_seq = Peek() == '[';
    char close = is_seq ? ']' : '}';
    picojson::array items;
    picojson::object map;
    Adv();
    for (;;) {
      if (!SkipFlowSpace(start_line)) return false;
      if (Peek() == close) break;
      if (is_seq) {
        picojson::value item;
        if (!ParseFlowNode(&item)) return false;
        items.push_back(std::move(item));
      } else {
        std::string key;
        if (!ParseFlowKey(&key)) return false;
        if (map.count(key)) return Fail("duplicate key \"" + key + "\"");
        picojson::value value;
        if (!SkipFlowSpace(start_line)) return false;
        if (Peek() == ':') {
          Adv();
          if (!SkipFlowSpace(start_line)) return false;
          if (Peek() != ',' && Peek() != close && !ParseFlowNode(&value)) return false;
        }
        map[key] = std::move(value);
      }
      if (!SkipFlowSpace(start_line)) return false;
      if (Peek() == close) break;
      if (Peek() != ',') return Fail(std::string("expected ',' or '") + close + "', found " + Quoted());
      Adv();
    }
    Adv();  // close
    *out = is_seq ? picojson::value(std::move(items)) : picojson::value(std::move(map));
    return true;
  }

  bool ParseFlowKey(std::string* key) {
    char c = Peek();
    if (c == '[' || c == '{') return Fail("complex keys (collections as keys) are not supported");
    if (c == ':') return Fail("empty keys are not supported");
    if (c == '|' || c == '>') return Fail("block scalars are not allowed inside [ ] or { }");
    if (!CheckNodeStart()) return false;
    if (c == '"' || c == '\'') return ParseQuoted(key);
    ParsePlain(-1, true, key);
    return true;
  }

  // --- scalars -------------------------------------------------------------------------
  // YAML 1.2 core schema for plain scalars.
  bool Resolve(const std::string& t, picojson::value* out) {
    if (t.empty() || t == "~" || t == "null" || t == "Null" || t == "NULL") { *out = picojson::value(); return true; }
    if (t == "true" || t == "True" || t == "TRUE") { *out = picojson::value(true); return true; }
    if (t == "false" || t == "False" || t == "FALSE") { *out = picojson::value(false); return true; }
    double d = 0;
    if (IsDecimalNumber(t)) {
      const char* b = t.data() + (t[0] == '+' ? 1 : 0);
      if (std::from_chars(b, t.data() + t.size(), d).ec != std::errc() || !std::isfinite(d)) {
        return Fail("number " + t + " is out of range");
      }
      *out = picojson::value(d);
      return true;
    }
    if (ParseRadixInt(t, &d)) {
      if (!std::isfinite(d)) return Fail("number " + t + " is out of range");
      *out = picojson::value(d);
      return true;
    }
    std::string u = t.substr(t[0] == '-' || t[0] == '+' ? 1 : 0);
    if (u == ".inf" || u == ".Inf" || u == ".INF" || u == ".nan" || u == ".NaN" || u == ".NAN") {
      return Fail(t + " cannot be represented in JSON");
    }
    *out = picojson::value(t);
    return true;
  }
};

}  // namespace yaml_detail

// Parses a YAML stream (documents separated by "---") into one value per non-empty document,
// in order. On error returns kInvalid with a message "line N: what is wrong"; never throws.
inline Result<std::vector<picojson::value>> ParseYamlDocuments(const std::string& text) {
  return yaml_detail::Parser(text).Run();
}
