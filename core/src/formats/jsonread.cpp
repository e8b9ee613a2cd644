// SPDX-License-Identifier: GPL-3.0-or-later
// parseJson (jsonread.h): nlohmann's parser with a callback that tracks the open objects and arrays,
// so that depth and duplicate keys are checked while parsing, before any value is built twice.
#include "jsonread.h"

#include "attnviz/fileio.h"

#include <cstdio>
#include <new>
#include <set>
#include <vector>

namespace attnviz::detail {

namespace {

// Thrown from the parser callback; nlohmann lets it through and frees what it had built.
struct Refused {
    std::string message;
};

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

// parseJson and checkJsonText: with `out` null nothing is kept (the callback discards every value
// once it is checked), so checking costs the text's size, not a document's.
Status parseLimited(const std::string &text, const std::string &name, nlohmann::json *out, const char *what, int maxDepth)
{
    using json = nlohmann::json;
    const bool keep = out != nullptr;
    std::vector<Frame> stack;
    auto callback = [&](int, json::parse_event_t event, json &parsed) {
        switch (event) {
        case json::parse_event_t::object_start:
        case json::parse_event_t::array_start:
            if (int(stack.size()) >= maxDepth)
                throw Refused{pathOf(stack) + ": nested deeper than " + std::to_string(maxDepth) + " levels"};
            stack.push_back({event == json::parse_event_t::object_start, {}, {}});
            break;
        case json::parse_event_t::key:
            if (!stack.empty() && stack.back().object) {
                Frame &f = stack.back();
                f.current = parsed.get<std::string>();
                if (!f.keys.insert(f.current).second)
                    throw Refused{pathOf(stack) + ": duplicate key (a field may be given once)"};
            }
            break;
        case json::parse_event_t::object_end:
        case json::parse_event_t::array_end:
            if (!stack.empty())
                stack.pop_back();
            return keep;
        case json::parse_event_t::value: return keep;
        }
        return true;
    };
    try {
        json doc = json::parse(text, callback);
        if (out)
            *out = std::move(doc);
    } catch (const Refused &r) {
        return Status::error(StatusCode::ParseError, name + ": " + oneLine(r.message));
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
