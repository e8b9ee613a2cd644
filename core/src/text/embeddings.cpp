// SPDX-License-Identifier: GPL-3.0-or-later
// Embedding tables: the three readers (text, word2vec binary, .avec), the .avec writer and the
// sentence lookup. Readers never trust a count a header claims: it is checked against what the
// file can hold before anything is reserved, and against the rows read afterwards.
#include "attnviz/embeddings.h"

#include "attnviz/fileio.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cctype>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>

namespace attnviz {

int EmbeddingTable::indexOf(const std::string &word) const
{
    auto it = m_index.find(word);
    return it == m_index.end() ? -1 : it->second;
}

Eigen::Map<const Vec<float>> EmbeddingTable::vector(int index) const
{
    return Eigen::Map<const Vec<float>>(m_vectors.data() + Eigen::Index(index) * m_vectors.cols(), m_vectors.cols());
}

void EmbeddingTable::assign(std::vector<std::string> words, Mat<float> vectors, std::string source)
{
    m_words = std::move(words);
    m_vectors = std::move(vectors);
    m_source = std::move(source);
    m_index.clear();
    m_index.reserve(m_words.size());
    for (size_t i = 0; i < m_words.size(); ++i)
        m_index.emplace(m_words[i], int(i));
    double sum = 0;
    for (Eigen::Index i = 0; i < m_vectors.rows(); ++i)
        sum += m_vectors.row(i).norm();
    m_meanNorm = m_vectors.rows() ? float(sum / double(m_vectors.rows())) : 1.0f;
    if (!(m_meanNorm > 0))
        m_meanNorm = 1.0f;
}

Vec<float> EmbeddingTable::fallbackVector(const std::string &word) const
{
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : word) {
        h ^= c;
        h *= 1099511628211ull;
    }
    std::mt19937_64 rng(h);
    const int d = std::max(1, dim());
    // E|x|^2 = d a^2 / 3  =>  a = norm * sqrt(3 / d)
    const float a = m_meanNorm * std::sqrt(3.0f / float(d));
    Vec<float> v(d);
    for (int i = 0; i < d; ++i)
        v[i] = float((double(rng() >> 11) * (1.0 / 9007199254740992.0)) * 2.0 - 1.0) * a;
    return v;
}

namespace {

std::string where(const std::string &name, size_t line) { return name + ":" + std::to_string(line) + ": "; }

// A whole token as a decimal integer ("1e-320" or "12abc" are not).
bool parseWholeInt(std::string_view s, long long &v)
{
    const char *b = s.data(), *e = s.data() + s.size();
    auto r = std::from_chars(b, e, v);
    return r.ec == std::errc() && r.ptr == e;
}

bool parseFloat(std::string_view s, float &v)
{
    const char *b = s.data(), *e = s.data() + s.size();
    auto r = std::from_chars(b, e, v);
    return r.ec == std::errc() && r.ptr == e;
}

std::vector<std::string_view> splitWs(std::string_view line)
{
    std::vector<std::string_view> parts;
    size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
            ++i;
        size_t j = i;
        while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r')
            ++j;
        if (j > i)
            parts.emplace_back(line.substr(i, j - i));
        i = j;
    }
    return parts;
}

template <typename V>
bool readLe(const char *&p, const char *end, V &v)
{
    if (size_t(end - p) < sizeof(V))
        return false;
    std::memcpy(&v, p, sizeof(V));
    p += sizeof(V);
    return true;
}

Status parseAvec(const std::string &data, const std::string &name, EmbeddingTable &out)
{
    const char *p = data.data(), *end = data.data() + data.size();
    auto bad = [&](const std::string &what) {
        return Status::error(StatusCode::ParseError, name + ": not a valid .avec table (" + what + ")");
    };
    if (data.size() < 20 || std::memcmp(p, "AVEC", 4) != 0)
        return bad("missing AVEC magic");
    p += 4;
    uint32_t version = 0, count = 0, dim = 0, flags = 0;
    readLe(p, end, version);
    readLe(p, end, count);
    readLe(p, end, dim);
    readLe(p, end, flags);
    if (version != 1)
        return bad("version " + std::to_string(version) + ", this build reads version 1");
    if (flags != 0)
        return bad("unknown flags 0x" + [&] {
            char hex[16];
            std::snprintf(hex, sizeof hex, "%x", flags);
            return std::string(hex);
        }() + " (version 1 defines none)");
    if (count == 0)
        return bad("the header announces 0 words");
    if (dim == 0 || dim > 4096)
        return bad("implausible header: " + std::to_string(count) + " words of dimension " + std::to_string(dim));
    // Each word takes at least its length byte and its vector (scale + dim bytes).
    const uint64_t minBytes = uint64_t(count) * (1 + 4 + uint64_t(dim));
    if (minBytes > uint64_t(end - p))
        return bad("truncated vocabulary and vectors: the header announces " + std::to_string(count) + " words of dimension " + std::to_string(dim) +
                   ", which need at least " + std::to_string(minBytes) + " bytes; the file has " +
                   std::to_string(end - p) + " after the header");
    std::vector<std::string> words;
    words.reserve(count);
    for (uint32_t i = 0; i < count; ++i) {
        uint8_t len = 0;
        if (!readLe(p, end, len) || size_t(end - p) < len)
            return bad("truncated vocabulary at word " + std::to_string(i));
        words.emplace_back(p, len);
        p += len;
    }
    const size_t rec = 4 + size_t(dim);
    if (size_t(end - p) != rec * count)
        return bad("vector block is " + std::to_string(end - p) + " bytes, expected " + std::to_string(rec * count));
    Mat<float> vecs(count, dim);
    for (uint32_t i = 0; i < count; ++i) {
        float scale;
        std::memcpy(&scale, p, 4);
        const auto *q = reinterpret_cast<const int8_t *>(p + 4);
        if (!std::isfinite(scale))
            return bad("non-finite scale for word " + quoteText(words[i], 40));
        for (uint32_t j = 0; j < dim; ++j)
            vecs(i, j) = scale * float(q[j]);
        p += rec;
    }
    out.assign(std::move(words), std::move(vecs), name);
    return {};
}

Status parseWord2VecBinary(const std::string &data, const std::string &name, EmbeddingTable &out,
                           const ProgressFn &progress)
{
    size_t nl = data.find('\n');
    if (nl == std::string::npos)
        return Status::error(StatusCode::ParseError, name + ": word2vec binary without a header line");
    auto head = splitWs(std::string_view(data).substr(0, nl));
    long long count = 0, dim = 0;
    if (head.size() != 2 || !parseWholeInt(head[0], count) || !parseWholeInt(head[1], dim))
        return Status::error(StatusCode::ParseError,
                             name + ":1: word2vec binary header must be '<count> <dim>' (two whole numbers)");
    if (count <= 0)
        return Status::error(StatusCode::ParseError, name + ":1: the header announces " + std::to_string(count) + " words");
    if (dim <= 0 || dim > 10000)
        return Status::error(StatusCode::ParseError, name + ":1: implausible dimension " + std::to_string(dim));
    size_t pos = nl + 1;
    // Each word takes at least one byte, a space and dim floats: what the rest of the file can hold.
    const uint64_t maxWords = uint64_t(data.size() - pos) / (2 + 4 * uint64_t(dim));
    if (uint64_t(count) > maxWords)
        return Status::error(StatusCode::ParseError, name + ":1: the header announces " + std::to_string(count) +
                                                         " words of dimension " + std::to_string(dim) + ", the file holds at most " +
                                                         std::to_string(maxWords));
    std::vector<std::string> words;
    words.reserve(size_t(count));
    Mat<float> vecs(count, dim);
    for (long long i = 0; i < count; ++i) {
        while (pos < data.size() && (data[pos] == '\n' || data[pos] == ' '))
            ++pos;
        size_t sp = data.find(' ', pos);
        if (sp == std::string::npos)
            return Status::error(StatusCode::ParseError, name + ": truncated at word " + std::to_string(i + 1) + " of " +
                                                             std::to_string(count));
        words.emplace_back(data.substr(pos, sp - pos));
        pos = sp + 1;
        if (data.size() - pos < size_t(dim) * 4)
            return Status::error(StatusCode::ParseError, name + ": truncated vector for " + quoteText(words.back(), 40));
        std::memcpy(vecs.data() + i * dim, data.data() + pos, size_t(dim) * 4);
        pos += size_t(dim) * 4;
        if (!vecs.row(i).allFinite())
            return Status::error(StatusCode::NonFinite, name + ": NaN or Inf in the vector of " + quoteText(words.back(), 40));
        if (progress && (i & 4095) == 0 && !progress(double(i) / double(count)))
            return Status::error(StatusCode::Cancelled, name + ": loading cancelled");
    }
    while (pos < data.size() && std::isspace(static_cast<unsigned char>(data[pos])))
        ++pos;
    if (pos != data.size())
        return Status::error(StatusCode::ParseError, name + ": " + std::to_string(data.size() - pos) +
                                                         " bytes after the " + std::to_string(count) +
                                                         " words the header announces");
    out.assign(std::move(words), std::move(vecs), name);
    return {};
}

} // namespace

Status parseEmbeddingText(const std::string &data, const std::string &name, EmbeddingTable &out,
                          const ProgressFn &progress)
{
    std::vector<std::string> words;
    std::vector<float> values;
    int dim = -1;
    long long headerCount = -1; // the "count dim" header's count, when there is one
    size_t lineNo = 0, pos = 0;
    while (pos < data.size()) {
        size_t nl = data.find('\n', pos);
        if (nl == std::string::npos)
            nl = data.size();
        std::string_view line(data.data() + pos, nl - pos);
        pos = nl + 1;
        ++lineNo;
        auto parts = splitWs(line);
        if (parts.empty())
            continue;
        if (lineNo == 1 && parts.size() == 2) { // word2vec / fastText header "count dim"
            long long c = 0, d = 0;
            if (parseWholeInt(parts[0], c) && parseWholeInt(parts[1], d)) {
                if (d <= 0 || d > 10000)
                    return Status::error(StatusCode::ParseError, where(name, lineNo) + "implausible dimension " +
                                                                     std::to_string(d));
                // A row is at least a one-byte word and d numbers of two bytes each ("0 ").
                const long long maxRows = (long long)(data.size() / (2 + 2 * size_t(d)));
                if (c <= 0 || c > maxRows)
                    return Status::error(StatusCode::ParseError, where(name, lineNo) + "the header announces " +
                                                                     std::to_string(c) + " words of dimension " +
                                                                     std::to_string(d) + ", the file holds at most " +
                                                                     std::to_string(maxRows));
                dim = int(d);
                headerCount = c;
                words.reserve(size_t(c));
                values.reserve(size_t(c) * size_t(d));
                continue;
            }
        }
        if (parts.size() < 2)
            return Status::error(StatusCode::ParseError, where(name, lineNo) + "expected a word and its numbers");
        const int n = int(parts.size()) - 1;
        if (dim < 0)
            dim = n;
        if (n != dim)
            return Status::error(StatusCode::ParseError, where(name, lineNo) + "expected " + std::to_string(dim) +
                                                             " numbers, found " + std::to_string(n));
        for (int k = 1; k <= n; ++k) {
            float v;
            if (!parseFloat(parts[size_t(k)], v))
                return Status::error(StatusCode::ParseError, where(name, lineNo) + quoteText(parts[size_t(k)], 40) +
                                                                 " is not a number");
            if (!std::isfinite(v))
                return Status::error(StatusCode::NonFinite, where(name, lineNo) + "NaN or Inf in the vector of " +
                                                                quoteText(parts[0], 40));
            values.push_back(v);
        }
        words.emplace_back(parts[0]);
        if (progress && (lineNo & 8191) == 0 && !progress(double(pos) / double(data.size())))
            return Status::error(StatusCode::Cancelled, name + ": loading cancelled");
    }
    if (words.empty())
        return Status::error(StatusCode::ParseError, name + ": no vectors found");
    if (headerCount >= 0 && headerCount != (long long)words.size())
        return Status::error(StatusCode::ParseError, name + ":1: the header announces " + std::to_string(headerCount) +
                                                         " words, the file has " + std::to_string(words.size()));
    Mat<float> vecs = Eigen::Map<Mat<float>>(values.data(), Eigen::Index(words.size()), dim);
    out.assign(std::move(words), std::move(vecs), name);
    if (progress)
        progress(1.0);
    return {};
}

Status loadEmbeddings(const std::string &path, EmbeddingTable &out, EmbeddingFormat format, const ProgressFn &progress)
{
    // Read in chunks so that a large file reports progress (the first 30 %) and can be cancelled
    // while it is still being read; parsing reports the remaining 70 %.
    uint64_t size = 0;
    if (Status st = regularFileSize(path, size); !st)
        return st;
    if (size > kMaxEmbeddingFileBytes)
        return Status::error(StatusCode::InvalidInput, path + ": " + describeBytes(size) + ", more than the " +
                                                           describeBytes(kMaxEmbeddingFileBytes) +
                                                           " an embedding table may have");
    std::ifstream f(path, std::ios::binary);
    if (!f)
        return Status::error(StatusCode::IoError, path + ": cannot read (" + std::strerror(errno) + ")");
    std::string data;
    try {
        data.resize(size_t(size));
    } catch (const std::bad_alloc &) {
        return Status::error(StatusCode::IoError, path + ": not enough memory to read " + describeBytes(size));
    }
    const size_t chunk = size_t(8) << 20;
    for (size_t done = 0; done < data.size();) {
        const size_t n = std::min(chunk, data.size() - done);
        if (!f.read(&data[done], std::streamsize(n)))
            return Status::error(StatusCode::IoError, path + ": read failed (the file shrank while it was read?)");
        done += n;
        if (progress && !progress(0.3 * double(done) / double(data.size())))
            return Status::error(StatusCode::Cancelled, path + ": loading cancelled");
    }
    ProgressFn scaled;
    if (progress)
        scaled = [&](double p) { return progress(p < 0 ? p : 0.3 + 0.7 * p); };
    return parseEmbeddings(data, path, out, format, scaled);
}

Status parseEmbeddings(const std::string &data, const std::string &path, EmbeddingTable &out, EmbeddingFormat format,
                       const ProgressFn &progress)
{
    if (data.empty())
        return Status::error(StatusCode::ParseError, path + ": empty file");
    if (format == EmbeddingFormat::Auto) {
        if (data.size() >= 4 && std::memcmp(data.data(), "AVEC", 4) == 0) {
            format = EmbeddingFormat::Avec;
        } else {
            // word2vec binary: a text header line, then raw floats (bytes that are not text)
            format = EmbeddingFormat::Text;
            size_t nl = data.find('\n');
            if (nl != std::string::npos && nl < 64) {
                auto head = splitWs(std::string_view(data).substr(0, nl));
                if (head.size() == 2) {
                    size_t probe = std::min(data.size(), nl + 1 + 4096);
                    for (size_t i = nl + 1; i < probe; ++i) {
                        unsigned char c = static_cast<unsigned char>(data[i]);
                        if (c == 0 || (c < 0x20 && c != '\n' && c != '\r' && c != '\t')) {
                            format = EmbeddingFormat::Word2VecBinary;
                            break;
                        }
                    }
                }
            }
        }
    }
    EmbeddingTable table;
    Status st;
    try {
        switch (format) {
        case EmbeddingFormat::Avec: st = parseAvec(data, path, table); break;
        case EmbeddingFormat::Word2VecBinary: st = parseWord2VecBinary(data, path, table, progress); break;
        default: st = parseEmbeddingText(data, path, table, progress); break;
        }
    } catch (const std::bad_alloc &) { // counts are checked against the file; the machine may still be smaller
        return Status::error(StatusCode::IoError, path + ": not enough memory to load the table");
    }
    if (st)
        out = std::move(table); // the caller's table is untouched on error
    return st;
}

Status writeAvec(const std::string &path, const EmbeddingTable &table, size_t maxWords)
{
    const size_t count = maxWords ? std::min(maxWords, size_t(table.size())) : size_t(table.size());
    std::string buf("AVEC", 4);
    auto put32 = [&](uint32_t v) { buf.append(reinterpret_cast<const char *>(&v), 4); };
    put32(1);
    put32(uint32_t(count));
    put32(uint32_t(table.dim()));
    put32(0);
    for (size_t i = 0; i < count; ++i) {
        const std::string &w = table.words()[i];
        if (w.size() > 255)
            return Status::error(StatusCode::InvalidInput, "word " + std::to_string(i) + " is longer than 255 bytes");
        buf += char(uint8_t(w.size()));
        buf += w;
    }
    for (size_t i = 0; i < count; ++i) {
        auto v = table.vector(int(i));
        const float mx = v.cwiseAbs().maxCoeff();
        const float scale = mx > 0 ? mx / 127.0f : 1.0f;
        buf.append(reinterpret_cast<const char *>(&scale), 4);
        for (int j = 0; j < table.dim(); ++j) {
            const long q = std::lround(v[j] / scale);
            buf += char(int8_t(std::clamp(q, -127L, 127L)));
        }
    }
    const std::string tmp = path + ".tmp";
    {
        std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
        if (!f)
            return Status::error(StatusCode::IoError, path + ": cannot write (" + std::strerror(errno) + ")");
        f.write(buf.data(), std::streamsize(buf.size()));
        if (!f)
            return Status::error(StatusCode::IoError, path + ": write failed");
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
        return Status::error(StatusCode::IoError, path + ": cannot replace (" + std::strerror(errno) + ")");
    return {};
}

EmbeddedSentence embedSentence(const EmbeddingTable &table, const std::string &sentence)
{
    EmbeddedSentence out;
    out.tokens = tokenize(sentence).tokens;
    const int d = table.dim();
    out.matrix.resize(Eigen::Index(out.tokens.size()), d);
    out.unknown.assign(out.tokens.size(), 0);
    for (size_t i = 0; i < out.tokens.size(); ++i) {
        const int idx = table.indexOf(out.tokens[i].text);
        if (idx >= 0) {
            out.matrix.row(Eigen::Index(i)) = table.vector(idx).transpose();
        } else {
            out.unknown[i] = 1;
            out.matrix.row(Eigen::Index(i)) = table.fallbackVector(out.tokens[i].text).transpose();
        }
    }
    return out;
}

} // namespace attnviz
