// SPDX-License-Identifier: GPL-3.0-or-later
// The tiny fixture model folders (tests/fixtures/models) for the suites that open them: their paths,
// their expected.json cases, and the tools of the bad-folder tables (a copy to spoil, a safetensors
// file read and written back, a JSON file edited). Header-only, like runattnviz.h, so that the
// command-line suites need not link the window. ATTNVIZ_FIXTURES_DIR is defined for every test.
#pragma once

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>

#include <functional>

namespace attnviz_test {

inline QString fixtureModel(const QString &model) { return QStringLiteral(ATTNVIZ_FIXTURES_DIR "/models/") + model; }

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

inline void writeSafetensors(const QString &path, const Safetensors &st)
{
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
