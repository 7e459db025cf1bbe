// The bodies of fake_json.hpp (the contracts are there).
#include "test/fake/fake_json.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace fake {

const Json* Member(const Json& v, std::string_view key) {
  if (!v.is<JsonObject>()) return nullptr;
  const auto& o = v.get<JsonObject>();
  auto it = o.find(std::string(key));
  return it == o.end() ? nullptr : &it->second;
}

const Json* Path(const Json& v, std::initializer_list<std::string_view> keys) {
  const Json* cur = &v;
  for (std::string_view k : keys) {
    cur = Member(*cur, k);
    if (cur == nullptr) return nullptr;
  }
  return cur;
}

const std::string& Str(const Json& v, std::initializer_list<std::string_view> keys) {
  static const std::string kEmpty;
  const Json* p = Path(v, keys);
  return (p != nullptr && p->is<std::string>()) ? p->get<std::string>() : kEmpty;
}

JsonObject& Obj(Json& v, std::initializer_list<std::string_view> keys) {
  Json* cur = &v;
  if (!cur->is<JsonObject>()) *cur = Json(JsonObject());
  for (std::string_view k : keys) {
    Json& next = cur->get<JsonObject>()[std::string(k)];
    if (!next.is<JsonObject>()) next = Json(JsonObject());
    cur = &next;
  }
  return cur->get<JsonObject>();
}

const std::string& Annotation(const Json& v, std::string_view key) {
  static const std::string kEmpty;
  const Json* a = Path(v, {"metadata", "annotations"});
  const Json* s = a ? Member(*a, key) : nullptr;
  return (s != nullptr && s->is<std::string>()) ? s->get<std::string>() : kEmpty;
}

std::vector<std::string> StringList(const Json& v, std::initializer_list<std::string_view> keys) {
  std::vector<std::string> out;
  const Json* p = Path(v, keys);
  if (p == nullptr || !p->is<JsonArray>()) return out;
  for (const Json& e : p->get<JsonArray>())
    if (e.is<std::string>()) out.push_back(e.get<std::string>());
  return out;
}

Json StringArray(const std::vector<std::string>& items) {
  JsonArray a;
  for (const auto& s : items) a.emplace_back(s);
  return Json(a);
}

std::string NowRfc3339() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

long long ParseRfc3339(const std::string& s) {
  std::tm tm{};
  if (strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm) == nullptr) return -1;
  return static_cast<long long>(timegm(&tm));
}

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double ParseQuantity(const std::string& q) {
  size_t i = 0;
  while (i < q.size() && (std::isdigit(static_cast<unsigned char>(q[i])) || q[i] == '.' || q[i] == '+' || q[i] == '-'))
    ++i;
  if (i == 0) return NAN;
  char* end = nullptr;
  std::string num = q.substr(0, i);
  double n = std::strtod(num.c_str(), &end);
  if (*end != '\0') return NAN;
  std::string suffix = q.substr(i);
  static const std::pair<const char*, double> kSuffixes[] = {
      {"", 1},      {"Ki", 1024.0},      {"Mi", 1048576.0}, {"Gi", 1073741824.0}, {"Ti", 1099511627776.0},
      {"Pi", 1125899906842624.0}, {"Ei", 1152921504606846976.0}, {"m", 1e-3}, {"k", 1e3}, {"M", 1e6},
      {"G", 1e9},   {"T", 1e12},         {"P", 1e15},       {"E", 1e18}};
  for (const auto& [s, mult] : kSuffixes)
    if (suffix == s) return n * mult;
  if (suffix.size() > 1 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    double exp = std::strtod(suffix.c_str() + 1, &end);
    if (*end == '\0') return n * std::pow(10.0, exp);
  }
  return NAN;
}

Json StatusBody(int code, const std::string& reason, const std::string& message, const Details* d) {
  JsonObject s;
  s["kind"] = Json("Status");
  s["apiVersion"] = Json("v1");
  s["metadata"] = Json(JsonObject());
  s["status"] = Json(code < 400 ? "Success" : "Failure");  // code 0: a success without a code
  if (!message.empty()) s["message"] = Json(message);
  if (!reason.empty()) s["reason"] = Json(reason);
  if (d != nullptr) {
    JsonObject det;
    if (!d->name.empty()) det["name"] = Json(d->name);
    if (!d->group.empty()) det["group"] = Json(d->group);
    if (!d->kind.empty()) det["kind"] = Json(d->kind);
    if (!d->uid.empty()) det["uid"] = Json(d->uid);
    if (!d->causes.empty()) det["causes"] = Json(d->causes);
    if (d->retry_after > 0) det["retryAfterSeconds"] = Json(static_cast<double>(d->retry_after));
    s["details"] = Json(det);
  }
  if (code != 0) s["code"] = Json(static_cast<double>(code));
  return Json(s);
}

std::string ReasonForCode(int code) {
  switch (code) {
    case 400: return "BadRequest";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "NotFound";
    case 405: return "MethodNotAllowed";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 415: return "UnsupportedMediaType";
    case 422: return "Invalid";
    case 429: return "TooManyRequests";
    case 500: return "InternalError";
    case 503: return "ServiceUnavailable";
    case 504: return "Timeout";
    default: return code >= 500 ? "InternalError" : "";
  }
}

FieldError Required(const std::string& field, const std::string& detail) {
  return {"FieldValueRequired", field, "Required value" + (detail.empty() ? "" : ": " + detail)};
}

FieldError InvalidValue(const std::string& field, const std::string& value, const std::string& detail) {
  return {"FieldValueInvalid", field, "Invalid value: \"" + value + "\": " + detail};
}

FieldError Forbidden(const std::string& field, const std::string& detail) {
  return {"FieldValueForbidden", field, "Forbidden: " + detail};
}

FieldError NotSupported(const std::string& field, const std::string& value, const std::vector<std::string>& valid) {
  std::string list;
  for (const auto& v : valid) list += (list.empty() ? "\"" : ", \"") + v + "\"";
  return {"FieldValueNotSupported", field, "Unsupported value: \"" + value + "\": supported values: " + list};
}

Json MergePatch(const Json& target, const Json& patch) {
  if (!patch.is<JsonObject>()) return patch;
  Json out = target.is<JsonObject>() ? target : Json(JsonObject());
  auto& o = out.get<JsonObject>();
  for (const auto& [k, v] : patch.get<JsonObject>()) {
    if (v.is<JsonNull>()) {
      o.erase(k);
    } else {
      auto it = o.find(k);
      o[k] = MergePatch(it == o.end() ? Json() : it->second, v);
    }
  }
  return out;
}

namespace patch_detail {
namespace {

Json StrategicMerge(const Json& target, const Json& patch);

// A list with patchStrategy "merge" and patchMergeKey `key` (status.conditions by "type"): each
// item of the patch merges into the target's item with the same key or is appended, and an
// item {"$patch": "delete", key: ...} removes it; then "$setElementOrder/<list>" (`order`, if
// any) puts the items it names first, in its order, the others after them as they were.
Json MergeListByKey(const Json& target, const Json& patch, const std::string& key, const Json* order) {
  JsonArray out = target.is<JsonArray>() ? target.get<JsonArray>() : JsonArray();
  auto find = [&](const std::string& id) {
    return std::find_if(out.begin(), out.end(), [&](const Json& e) { return Str(e, {key}) == id; });
  };
  for (const Json& item : patch.get<JsonArray>()) {
    auto same = find(Str(item, {key}));
    if (Str(item, {"$patch"}) == "delete") {
      if (same != out.end()) out.erase(same);
    } else if (same != out.end()) {
      *same = StrategicMerge(*same, item);
    } else {
      out.push_back(StrategicMerge(Json(JsonObject()), item));
    }
  }
  if (order != nullptr && order->is<JsonArray>()) {
    JsonArray sorted;
    for (const Json& o : order->get<JsonArray>())
      if (auto it = find(Str(o, {key})); it != out.end()) sorted.push_back(*it), out.erase(it);
    sorted.insert(sorted.end(), out.begin(), out.end());
    out.swap(sorted);
  }
  return Json(out);
}

// A merge patch in which "conditions" lists merge by "type" and "$" directives are taken out.
Json StrategicMerge(const Json& target, const Json& patch) {
  if (!patch.is<JsonObject>()) return patch;
  Json out = target.is<JsonObject>() ? target : Json(JsonObject());
  auto& o = out.get<JsonObject>();
  const auto& p = patch.get<JsonObject>();
  for (const auto& [k, v] : p) {
    if (k.rfind("$", 0) == 0) continue;
    if (v.is<JsonNull>()) {
      o.erase(k);
      continue;
    }
    auto it = o.find(k);
    const Json old = it == o.end() ? Json() : it->second;
    if (k == "conditions" && v.is<JsonArray>()) {
      auto order = p.find("$setElementOrder/conditions");
      o[k] = MergeListByKey(old, v, "type", order == p.end() ? nullptr : &order->second);
    } else {
      o[k] = StrategicMerge(old, v);
    }
  }
  return out;
}

}  // namespace
}  // namespace patch_detail

Json StrategicMergePatch(const Json& target, const Json& patch) {
  Json p = patch;
  std::vector<std::string> add, remove;
  bool has_add = false;
  if (p.is<JsonObject>()) {
    auto& po = p.get<JsonObject>();
    if (auto m = po.find("metadata"); m != po.end() && m->second.is<JsonObject>()) {
      auto& mo = m->second.get<JsonObject>();
      if (auto f = mo.find("finalizers"); f != mo.end() && f->second.is<JsonArray>()) {
        add = StringList(m->second, {"finalizers"});
        has_add = true;
        mo.erase(f);
      }
      if (auto d = mo.find("$deleteFromPrimitiveList/finalizers"); d != mo.end()) {
        remove = StringList(m->second, {"$deleteFromPrimitiveList/finalizers"});
        mo.erase(d);
      }
    }
  }
  Json out = patch_detail::StrategicMerge(target, p);
  if (has_add || !remove.empty()) {
    std::vector<std::string> fin = StringList(target, {"metadata", "finalizers"});
    for (const auto& a : add)
      if (std::find(fin.begin(), fin.end(), a) == fin.end()) fin.push_back(a);
    for (const auto& r : remove) fin.erase(std::remove(fin.begin(), fin.end(), r), fin.end());
    if (fin.empty())
      Meta(out).erase("finalizers");
    else
      Meta(out)["finalizers"] = StringArray(fin);
  }
  return out;
}

namespace patch_detail {
namespace {

// Splits an RFC 6901 pointer into unescaped tokens; false when it does not start with '/'.
bool SplitPointer(const std::string& ptr, std::vector<std::string>& out) {
  out.clear();
  if (ptr.empty()) return true;
  if (ptr[0] != '/') return false;
  size_t i = 1;
  while (true) {
    size_t j = ptr.find('/', i);
    std::string tok = ptr.substr(i, j == std::string::npos ? std::string::npos : j - i);
    std::string un;
    for (size_t k = 0; k < tok.size(); ++k) {
      if (tok[k] == '~' && k + 1 < tok.size() && (tok[k + 1] == '0' || tok[k + 1] == '1')) {
        un += tok[k + 1] == '0' ? '~' : '/';
        ++k;
      } else {
        un += tok[k];
      }
    }
    out.push_back(un);
    if (j == std::string::npos) return true;
    i = j + 1;
  }
}

bool ArrayIndex(const std::string& tok, size_t size, bool allow_end, size_t& idx) {
  if (allow_end && tok == "-") { idx = size; return true; }
  if (tok.empty() || tok.size() > 18 || tok.find_first_not_of("0123456789") != std::string::npos) return false;
  idx = std::stoul(tok);  // below 10^18: fits
  return allow_end ? idx <= size : idx < size;
}

// The parent container of the pointer's last token.
Json* Parent(Json& doc, const std::vector<std::string>& toks) {
  Json* cur = &doc;
  for (size_t i = 0; i + 1 < toks.size(); ++i) {
    if (cur->is<JsonObject>()) {
      auto& o = cur->get<JsonObject>();
      auto it = o.find(toks[i]);
      if (it == o.end()) return nullptr;
      cur = &it->second;
    } else if (cur->is<JsonArray>()) {
      size_t idx;
      if (!ArrayIndex(toks[i], cur->get<JsonArray>().size(), false, idx)) return nullptr;
      cur = &cur->get<JsonArray>()[idx];
    } else {
      return nullptr;
    }
  }
  return cur;
}

}  // namespace
}  // namespace patch_detail

Result<Json> JsonPatch(const Json& doc, const Json& ops) {
  using namespace patch_detail;
  if (!ops.is<JsonArray>()) return Status::Invalid("json patch must be an array of operations");
  Json out = doc;
  for (const Json& op : ops.get<JsonArray>()) {
    std::string kind = Str(op, {"op"}), path = Str(op, {"path"});
    std::vector<std::string> toks;
    if (!SplitPointer(path, toks)) return Status::Invalid("invalid json pointer \"" + path + "\"");
    const Json* value = Member(op, "value");
    if ((kind == "add" || kind == "replace" || kind == "test") && value == nullptr)
      return Status::Invalid("operation " + kind + " " + path + " has no value");
    if (toks.empty()) {
      if (kind == "add" || kind == "replace") { out = *value; continue; }
      if (kind == "test") {
        if (!(out == *value)) return Status::Invalid("testing value " + path + " failed");
        continue;
      }
      return Status::Invalid("unsupported operation " + kind + " on the whole document");
    }
    Json* parent = Parent(out, toks);
    if (parent == nullptr) return Status::Invalid("doc is missing path: \"" + path + "\"");
    const std::string& last = toks.back();
    if (parent->is<JsonObject>()) {
      auto& o = parent->get<JsonObject>();
      bool exists = o.count(last) > 0;
      if (kind == "add") {
        o[last] = *value;
      } else if (kind == "replace" || kind == "remove") {
        if (!exists) return Status::Invalid("doc is missing key: \"" + path + "\"");
        if (kind == "replace") o[last] = *value; else o.erase(last);
      } else if (kind == "test") {
        if (!exists || !(o[last] == *value)) return Status::Invalid("testing value " + path + " failed");
      } else {
        return Status::Invalid("unsupported json patch operation \"" + kind + "\"");
      }
    } else if (parent->is<JsonArray>()) {
      auto& a = parent->get<JsonArray>();
      size_t idx;
      if (!ArrayIndex(last, a.size(), kind == "add", idx)) return Status::Invalid("index out of range: \"" + path + "\"");
      if (kind == "add") {
        a.insert(a.begin() + static_cast<long>(idx), *value);
      } else if (kind == "replace") {
        a[idx] = *value;
      } else if (kind == "remove") {
        a.erase(a.begin() + static_cast<long>(idx));
      } else if (kind == "test") {
        if (!(a[idx] == *value)) return Status::Invalid("testing value " + path + " failed");
      } else {
        return Status::Invalid("unsupported json patch operation \"" + kind + "\"");
      }
    } else {
      return Status::Invalid("doc is missing path: \"" + path + "\"");
    }
  }
  return out;
}

}  // namespace fake
