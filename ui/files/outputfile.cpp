// SPDX-License-Identifier: GPL-3.0-or-later
// OutputFile (outputfile.h): stat() decides between QSaveFile and writing in place.
#include "files/outputfile.h"

#include <QFile>
#include <QSaveFile>

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace attnviz::ui {

OutputFile::OutputFile(const QString &path)
    : m_path(path)
{
}

OutputFile::~OutputFile() = default;

bool OutputFile::open(QString &why)
{
    if (m_path.isEmpty()) {
        why = QStringLiteral("no file name");
        return false;
    }
    struct stat st {};
    const QByteArray native = QFile::encodeName(m_path);
    if (::stat(native.constData(), &st) == 0 && !S_ISREG(st.st_mode)) {
        if (S_ISDIR(st.st_mode)) {
            why = QStringLiteral("is a folder");
            return false;
        }
        if (!S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode)) {
            why = QStringLiteral("not a regular file, a pipe or a character device (never replaced)");
            return false;
        }
        m_direct = std::make_unique<QFile>(m_path);
        if (!m_direct->open(QIODevice::WriteOnly)) {
            why = m_direct->errorString();
            m_direct.reset();
            return false;
        }
        return true;
    }
    m_save = std::make_unique<QSaveFile>(m_path);
    if (!m_save->open(QIODevice::WriteOnly)) {
        why = m_save->errorString();
        m_save.reset();
        return false;
    }
    return true;
}

QIODevice *OutputFile::device() const
{
    if (m_direct)
        return m_direct.get();
    return m_save.get();
}

bool OutputFile::commit(QString &why)
{
    if (m_save) {
        const bool ok = m_save->commit();
        if (!ok)
            why = m_save->errorString();
        m_save.reset();
        return ok;
    }
    if (m_direct) {
        const bool ok = m_direct->flush() && m_direct->error() == QFileDevice::NoError;
        if (!ok)
            why = m_direct->errorString();
        m_direct->close();
        m_direct.reset();
        return ok;
    }
    why = QStringLiteral("not open");
    return false;
}

void OutputFile::cancel()
{
    if (m_save)
        m_save->cancelWriting();
    m_save.reset();
    m_direct.reset();
}

bool writeOutputFile(const QString &path, const QByteArray &bytes, QString &why)
{
    OutputFile f(path);
    if (!f.open(why))
        return false;
    if (f.device()->write(bytes) != bytes.size()) {
        why = f.device()->errorString();
        f.cancel();
        return false;
    }
    return f.commit(why);
}

} // namespace attnviz::ui
