// SPDX-License-Identifier: GPL-3.0-or-later
// The tiny fixture model folders (tests/fixtures/models) for the suites that open them: their paths,
// their expected.json cases, and the tools of the bad-folder tables (a copy to spoil, a safetensors
// file read and written back, a JSON file edited). Header-only, like runattnviz.h, so that the
// command-line suites need not link the window. Paths come from testpaths.h (attnviz_testpaths).
#pragma once

#include "testpaths.h"
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>

#include <algorithm>
#include <functional>
#include <map>
#include <utility>
#include <vector>

namespace attnviz_test {

inline QString fixtureModel(const QString &model) { return QString::fromUtf8(ATTNVIZ_FIXTURE("/models/")) + model; }

// Case `index` of tests/fixtures/models/MODEL/expected.json (text, ids, tokens, attentions ...).
inline QJsonObject expectedCase(const QString &model, int index)
{
    QFile f(fixtureModel(model) + QStringLiteral("/expected.json"));
    f.open(QIODevice::ReadOnly);
    return QJsonDocument::fromJson(f.readAll()).object().value(QStringLiteral("cases")).toArray().at(index).toObject();
}

// A copy of a fixture folder (symbolic links resolved) to spoil.
inline QString copyModelFolder(const QString &model, const QTemporaryDir &tmp)
{
    const QString dst = tmp.filePath(model);
    QDir().mkpath(dst);
    for (const QFileInfo &fi : QDir(fixtureModel(model)).entryInfoList(QDir::Files))
        QFile::copy(fi.canonicalFilePath(), dst + QLatin1Char('/') + fi.fileName());
    return dst;
}

struct Safetensors {
    QJsonObject header;
    QByteArray data;
};

inline Safetensors readSafetensors(const QString &path)
{
    QFile f(path);
    f.open(QIODevice::ReadOnly);
    const QByteArray all = f.readAll();
    quint64 n = 0;
    for (int i = 7; i >= 0; --i)
        n = (n << 8) | quint8(all[i]);
    return {QJsonDocument::fromJson(all.mid(8, int(n))).object(), all.mid(8 + int(n))};
}

// Writes `st` with its data packed: the spans its entries name, in the order of their offsets, one
// after the other (a removed tensor leaves no gap, which the readers refuse as Hugging Face's does).
inline void writeSafetensors(const QString &path, const Safetensors &in)
{
    Safetensors st = in;
    std::vector<std::pair<qint64, QString>> order;
    for (auto it = in.header.begin(); it != in.header.end(); ++it)
        if (it.key() != QLatin1String("__metadata__"))
            order.emplace_back(it.value().toObject().value(QStringLiteral("data_offsets")).toArray()[0].toInteger(), it.key());
    std::sort(order.begin(), order.end());
    st.data.clear();
    std::map<std::pair<qint64, qint64>, qint64> placed; // two names of the same span keep sharing it
    for (const auto &[begin, name] : order) {
        QJsonObject e = in.header.value(name).toObject();
        const qint64 end = e.value(QStringLiteral("data_offsets")).toArray()[1].toInteger();
        auto it = placed.find({begin, end});
        if (it == placed.end()) {
            it = placed.emplace(std::make_pair(begin, end), qint64(st.data.size())).first;
            st.data += in.data.mid(int(begin), int(end - begin));
        }
        e.insert(QStringLiteral("data_offsets"), QJsonArray{it->second, it->second + (end - begin)});
        st.header.insert(name, e);
    }
    const QByteArray h = QJsonDocument(st.header).toJson(QJsonDocument::Compact);
    QByteArray len(8, '\0');
    for (int i = 0; i < 8; ++i)
        len[i] = char((quint64(h.size()) >> (8 * i)) & 0xFF);
    QFile f(path);
    f.open(QIODevice::WriteOnly | QIODevice::Truncate);
    f.write(len + h + st.data);
}

inline void editJson(const QString &path, const std::function<void(QJsonObject &)> &edit)
{
    QFile f(path);
    f.open(QIODevice::ReadOnly);
    QJsonObject o = QJsonDocument::fromJson(f.readAll()).object();
    f.close();
    edit(o);
    f.open(QIODevice::WriteOnly | QIODevice::Truncate);
    f.write(QJsonDocument(o).toJson());
}

} // namespace attnviz_test
