// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: session JSON (*.attnviz) as MainWindow::openSession reads it, without a window:
// ui::parseSessionText (the core's JSON checks, then QJsonDocument), then ui::sessionFromJson section
// by section, then written back (sessionToJson).
#include "files/session.h"

#include <QJsonObject>

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    using namespace attnviz::ui;
    QJsonObject json;
    QString error;
    if (!parseSessionText(QByteArray::fromRawData(reinterpret_cast<const char *>(data), qsizetype(size)), json, error)) {
        if (error.isEmpty() || error.contains(QLatin1Char('\n')))
            std::abort(); // a refusal is one line that says why
        return 0;
    }
    SessionState s;
    QStringList problems;
    if (sessionFromJson(json, s, &problems))
        (void)sessionToJson(s);
    return 0;
}
