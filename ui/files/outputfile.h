// SPDX-License-Identifier: GPL-3.0-or-later
// Where every output attnviz writes goes through (`-o` / `--out` of the command line, figure and
// matrix exports, sessions): a regular file, or a new one, is written beside its place and renamed
// over it when complete (QSaveFile: nothing half-written is ever left). A path that names a FIFO or
// a character device (/dev/stdout, /dev/null, a terminal) is written in place, never renamed over:
// replacing it with a regular file would break the pipe or, as root, the device node. A folder, a
// block device or a socket is refused.
#pragma once

#include <QString>

#include <memory>

class QFile;
class QIODevice;
class QSaveFile;

namespace attnviz::ui {

class OutputFile {
public:
    explicit OutputFile(const QString &path);
    ~OutputFile();
    OutputFile(const OutputFile &) = delete;
    OutputFile &operator=(const OutputFile &) = delete;

    // Opens for writing; false with the reason ("is a folder", "Permission denied") in `why`.
    bool open(QString &why);
    QIODevice *device() const;
    // Completes the write (the rename, or a flush in place); false with the reason in `why`
    // ("No space left on device"). Nothing is left at a new path after a failure.
    bool commit(QString &why);
    // Abandons the write: a new path keeps no file, an existing regular file is untouched.
    void cancel();

private:
    QString m_path;
    std::unique_ptr<QSaveFile> m_save;
    std::unique_ptr<QFile> m_direct;
};

// The whole of `bytes` to `path`; false with the reason in `why`.
bool writeOutputFile(const QString &path, const QByteArray &bytes, QString &why);

} // namespace attnviz::ui
