// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: session JSON (*.attnviz) as MainWindow::openSession reads it, without a window:
// QJsonDocument, then ui::sessionFromJson section by section, then written back (sessionToJson).
#include "files/session.h"

#include <QJsonDocument>
#include <QJsonObject>

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    using namespace attnviz::ui;
    const QJsonDocument doc =
        QJsonDocument::fromJson(QByteArray::fromRawData(reinterpret_cast<const char *>(data), qsizetype(size)));
    if (!doc.isObject())
        return 0;
    SessionState s;
    QStringList problems;
    if (sessionFromJson(doc.object(), s, &problems))
        (void)sessionToJson(s);
    return 0;
}
