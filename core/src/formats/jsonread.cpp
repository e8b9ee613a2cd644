// SPDX-License-Identifier: GPL-3.0-or-later
// parseJson (jsonread.h): depth and duplicate keys checked as nlohmann's SAX events come, then the
// document built by nlohmann's plain parser.
#include "jsonread.h"

#include "attnviz/fileio.h"

#include <cstdio>
#include <new>
#include <set>
#include <vector>

namespace attnviz::detail {

namespace {

// One open object or array: its keys so far (objects) and the key being read, for messages.
struct Frame {
    bool object = false;
    std::set<std::string> keys;
    std::string current;
};

std::string pathOf(const std::vector<Frame> &stack)
{
    std::string path;
    for (const Frame &f : stack) {
        if (!f.object || f.current.empty())
            continue;
        if (!path.empty())
            path += '.';
        path += f.current.size() > 64 ? quoteText(f.current) : f.current; // a key from the file: an excerpt
    }
    return path.empty() ? std::string("(top level)") : path;
}

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

// The limits, checked as nlohmann's SAX events come, before any document is built: nesting depth and
// duplicate keys. (nlohmann's callback parser could check them while it builds, but after every object
// it keeps it searches the whole enclosing array for discarded values, so an array of n objects costs
// n² — a tokenizer.json of 400,000 added tokens took minutes.)
struct LimitChecker : nlohmann::json_sax<nlohmann::json> {
    explicit LimitChecker(int maxDepth) : maxDepth(maxDepth) {}
    int maxDepth;
    std::vector<Frame> stack;
    std::string refused, malformed;

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
            refused = pathOf(stack) + ": nested deeper than " + std::to_string(maxDepth) + " levels";
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
            refused = pathOf(stack) + ": duplicate key (a field may be given once)";
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

// parseJson and checkJsonText: the limits first (LimitChecker), then, with `out`, the document built
// by the plain parser; with `out` null nothing is built, so checking costs the text's size.
Status parseLimited(const std::string &text, const std::string &name, nlohmann::json *out, const char *what, int maxDepth)
{
    using json = nlohmann::json;
    try {
        LimitChecker checker(maxDepth);
        if (!json::sax_parse(text, &checker)) {
            if (!checker.refused.empty())
                return Status::error(StatusCode::ParseError, name + ": " + oneLine(checker.refused));
            return Status::error(StatusCode::ParseError, name + ": malformed " + what + ": " + checker.malformed);
        }
        if (out)
            *out = json::parse(text);
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
