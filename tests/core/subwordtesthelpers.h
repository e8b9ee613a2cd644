// SPDX-License-Identifier: GPL-3.0-or-later
// What the subword tokenizer suites share: reading a fixture and the corpus, ids of tokens, the ids
// files' lines.
#pragma once

#include "attnviz/model.h"

#include <QByteArray>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QString>
#include <QStringList>

#include <string>
#include <vector>

namespace attnviz::testing {

inline QByteArray readAll(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// corpus.jsonl: one JSON string a line; empty when a line is not one.
inline std::vector<std::string> readCorpus(const QString &path)
{
    std::vector<std::string> corpus;
    for (const QByteArray &line : readAll(path).split('\n')) {
        if (line.isEmpty())
            continue;
        const QJsonDocument doc = QJsonDocument::fromJson("[" + line + "]");
        if (!doc.isArray() || !doc.array().at(0).isString())
            return {};
        corpus.push_back(doc.array().at(0).toString().toStdString());
    }
    return corpus;
}

inline std::vector<int> idsOf(const std::vector<TraceToken> &tokens)
{
    std::vector<int> ids;
    for (const TraceToken &t : tokens)
        ids.push_back(t.id);
    return ids;
}

// One line of an .ids fixture: ids separated by spaces.
inline std::vector<int> parseIds(const QByteArray &line)
{
    std::vector<int> ids;
    for (const QByteArray &part : line.split(' '))
        if (!part.isEmpty())
            ids.push_back(part.toInt());
    return ids;
}

inline QString show(const std::vector<int> &ids)
{
    QStringList s;
    for (int id : ids)
        s << QString::number(id);
    return s.join(QLatin1Char(' '));
}

} // namespace attnviz::testing
