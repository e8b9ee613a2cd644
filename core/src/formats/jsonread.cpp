// SPDX-License-Identifier: GPL-3.0-or-later
// parseJson (jsonread.h): one pass of nlohmann's SAX events builds the document and checks nesting
// depth and duplicate keys as it goes; checkJsonText runs the checks alone, building nothing.
#include "jsonread.h"

#include "attnviz/fileio.h"

#include <cstdio>
#include <new>
#include <set>
#include <utility>
#include <vector>

namespace attnviz::detail {

namespace {

// Where an error is: the keys of the open objects, outermost first, joined by '.' ("(top level)"
// when none). `keyOf(i)` is the key being read in open value i, null or empty for an array or an
// object before its first key.
template <typename KeyOf>
std::string pathOf(size_t depth, KeyOf keyOf)
{
    std::string path;
    for (size_t i = 0; i < depth; ++i) {
        const std::string *key = keyOf(i);
        if (!key || key->empty())
            continue;
        if (!path.empty())
            path += '.';
        path += key->size() > 64 ? quoteText(*key) : *key; // a key from the file: an excerpt
    }
    return path.empty() ? std::string("(top level)") : path;
}

// The two refusals, the same from both passes.
std::string tooDeep(const std::string &path, int maxDepth)
{
    return path + ": nested deeper than " + std::to_string(maxDepth) + " levels";
}
std::string duplicateKey(const std::string &path) { return path + ": duplicate key (a field may be given once)"; }

} // namespace

std::string oneLine(std::string message) { return printable(message); }

std::string jsonMessage(const nlohmann::json::exception &e)
{
    std::string m = e.what();
    if (m.rfind("[json.exception.", 0) == 0)
        if (auto p = m.find("] "); p != std::string::npos)
            m = m.substr(p + 2);
    return m;
}

namespace {

// Why parseJson and checkJsonText check the limits in SAX handlers of their own: nlohmann's callback
// parser could check them while it builds, but after every object it keeps it searches the whole
// enclosing array for discarded values, so an array of n objects costs n² — a tokenizer.json of
// 400,000 added tokens took minutes.

// checkJsonText's pass: nesting depth and duplicate keys checked, nothing built; each open object
// keeps the set of its keys so far.
struct LimitChecker : nlohmann::json_sax<nlohmann::json> {
    struct Frame {
        bool object = false;
        std::set<std::string> keys;
        std::string current; // the key being read, for messages
    };
    explicit LimitChecker(int maxDepth) : maxDepth(maxDepth) {}
    int maxDepth;
    std::vector<Frame> stack;
    std::string refused, malformed;

    std::string path() const
    {
        return pathOf(stack.size(), [&](size_t i) { return stack[i].object ? &stack[i].current : nullptr; });
    }
    bool null() override { return true; }
    bool boolean(bool) override { return true; }
    bool number_integer(number_integer_t) override { return true; }
    bool number_unsigned(number_unsigned_t) override { return true; }
    bool number_float(number_float_t, const string_t &) override { return true; }
    bool string(string_t &) override { return true; }
    bool binary(binary_t &) override { return true; }
    bool open(bool object)
    {
        if (int(stack.size()) >= maxDepth) {
            refused = tooDeep(path(), maxDepth);
            return false;
        }
        stack.push_back({object, {}, {}});
        return true;
    }
    bool start_object(std::size_t) override { return open(true); }
    bool start_array(std::size_t) override { return open(false); }
    bool key(string_t &k) override
    {
        Frame &f = stack.back();
        f.current = k;
        if (!f.keys.insert(f.current).second) {
            refused = duplicateKey(path());
            return false;
        }
        return true;
    }
    bool end_object() override
    {
        stack.pop_back();
        return true;
    }
    bool end_array() override
    {
        stack.pop_back();
        return true;
    }
    bool parse_error(std::size_t, const std::string &, const nlohmann::json::exception &e) override
    {
        malformed = jsonMessage(e);
        return false;
    }
};

// parseJson's pass: the document built from the SAX events (as nlohmann's json_sax_dom_parser does),
// with the same checks as LimitChecker: a duplicate key is found by inserting it into the object being
// built, and keys and strings are moved from the lexer into the document, not copied.
class DomBuilder {
public:
    using json = nlohmann::json;
    using number_integer_t = json::number_integer_t;
    using number_unsigned_t = json::number_unsigned_t;
    using number_float_t = json::number_float_t;
    using string_t = json::string_t;
    using binary_t = json::binary_t;

    explicit DomBuilder(int maxDepth) : m_maxDepth(maxDepth) {}
    json root;
    std::string refused, malformed;

    bool null() { return add(nullptr); }
    bool boolean(bool v) { return add(v); }
    bool number_integer(number_integer_t v) { return add(v); }
    bool number_unsigned(number_unsigned_t v) { return add(v); }
    bool number_float(number_float_t v, const string_t &) { return add(v); }
    bool string(string_t &v) { return add(std::move(v)); }
    bool binary(binary_t &v) { return add(json::binary(std::move(v))); }
    bool start_object(std::size_t) { return open(json::value_t::object); }
    bool start_array(std::size_t) { return open(json::value_t::array); }
    bool key(string_t &k)
    {
        Frame &f = m_stack.back();
        auto [it, fresh] = f.value->get_ref<json::object_t &>().emplace(std::move(k), nullptr);
        // a std::map's keys stay where they are while the object grows; a repeated key finds the
        // earlier, equal one, which the message names
        f.key = &it->first;
        if (!fresh) {
            refused = duplicateKey(path());
            return false;
        }
        m_element = &it->second;
        return true;
    }
    bool end_object() { return close(); }
    bool end_array() { return close(); }
    bool parse_error(std::size_t, const std::string &, const nlohmann::json::exception &e)
    {
        malformed = jsonMessage(e);
        return false;
    }

private:
    struct Frame {
        json *value;
        const std::string *key = nullptr; // objects: the key being read, for messages
    };
    std::string path() const
    {
        return pathOf(m_stack.size(), [&](size_t i) { return m_stack[i].key; });
    }
    // Where the next value goes: the root, the end of the open array, or the open object's new key.
    template <typename Value>
    json *place(Value &&v)
    {
        if (m_stack.empty()) {
            root = json(std::forward<Value>(v));
            return &root;
        }
        json &parent = *m_stack.back().value;
        if (parent.is_array()) {
            auto &array = parent.get_ref<json::array_t &>();
            array.emplace_back(std::forward<Value>(v));
            return &array.back();
        }
        *m_element = json(std::forward<Value>(v));
        return m_element;
    }
    template <typename Value>
    bool add(Value &&v)
    {
        place(std::forward<Value>(v));
        return true;
    }
    bool open(json::value_t type)
    {
        if (int(m_stack.size()) >= m_maxDepth) {
            refused = tooDeep(path(), m_maxDepth);
            return false;
        }
        m_stack.push_back({place(type)});
        return true;
    }
    bool close()
    {
        m_stack.pop_back();
        return true;
    }

    int m_maxDepth;
    std::vector<Frame> m_stack;  // the open objects and arrays, outermost first
    json *m_element = nullptr;   // the value of the open object's newest key
};

// parseJson (`out` set: DomBuilder) and checkJsonText (`out` null: LimitChecker, nothing built, so
// checking costs the text's size).
Status parseLimited(const std::string &text, const std::string &name, nlohmann::json *out, const char *what, int maxDepth)
{
    using json = nlohmann::json;
    auto refusal = [&](const std::string &refused, const std::string &malformed) {
        if (!refused.empty())
            return Status::error(StatusCode::ParseError, name + ": " + oneLine(refused));
        return Status::error(StatusCode::ParseError, name + ": malformed " + what + ": " + malformed);
    };
    try {
        if (out) {
            DomBuilder builder(maxDepth);
            if (!json::sax_parse(text, &builder))
                return refusal(builder.refused, builder.malformed);
            *out = std::move(builder.root);
        } else {
            LimitChecker checker(maxDepth);
            if (!json::sax_parse(text, &checker))
                return refusal(checker.refused, checker.malformed);
        }
    } catch (const json::exception &e) {
        return Status::error(StatusCode::ParseError, name + ": malformed " + what + ": " + jsonMessage(e));
    } catch (const std::bad_alloc &) {
        return Status::error(StatusCode::ParseError, name + ": out of memory while parsing the " + what);
    }
    return {};
}

} // namespace

Status parseJson(const std::string &text, const std::string &name, nlohmann::json &out, const char *what, int maxDepth)
{
    return parseLimited(text, name, &out, what, maxDepth);
}

Status readJsonFile(const std::string &path, uint64_t cap, nlohmann::json &out, int maxDepth)
{
    std::string text;
    if (Status st = readRegularFile(path, cap, text); !st)
        return st;
    return parseJson(text, path, out, "JSON", maxDepth);
}

} // namespace attnviz::detail

namespace attnviz {

Status checkJsonText(const std::string &text, const std::string &name)
{
    return detail::parseLimited(text, name, nullptr, "JSON", detail::kMaxJsonDepth);
}

Status readCheckedJsonFile(const std::string &path, uint64_t cap, std::string &out)
{
    std::string text;
    if (Status st = readRegularFile(path, cap, text); !st)
        return st;
    if (Status st = checkJsonText(text, path); !st)
        return st;
    out = std::move(text);
    return {};
}

} // namespace attnviz
