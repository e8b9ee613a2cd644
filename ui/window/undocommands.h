// SPDX-License-Identifier: GPL-3.0-or-later
// The window's undo commands (Edit ▸ Undo, Ctrl+Z): a change already made when it is pushed, undone
// and redone by two functions. Changes of one control in quick succession (a slider dragged, a spin
// box stepped) merge into one step: same merge key, less than 1.5 s apart.
#pragma once

#include <QDateTime>
#include <QString>
#include <QUndoCommand>

#include <functional>

namespace attnviz::ui {

class WindowCommand : public QUndoCommand {
public:
    // `mergeKey` "" never merges.
    WindowCommand(const QString &text, std::function<void()> undo, std::function<void()> redo,
                  const QString &mergeKey = QString())
        : QUndoCommand(text)
        , m_undo(std::move(undo))
        , m_redo(std::move(redo))
        , m_key(mergeKey)
    {
    }

    void undo() override { m_undo(); }
    void redo() override
    {
        if (m_done) // pushed after the change was made: QUndoStack::push's redo is not a second change
            m_redo();
        m_done = true;
    }
    int id() const override { return m_key.isEmpty() ? -1 : 1; }
    bool mergeWith(const QUndoCommand *other) override
    {
        const auto *o = static_cast<const WindowCommand *>(other);
        if (o->m_key != m_key || o->m_at - m_at > 1500)
            return false;
        m_redo = o->m_redo; // undo goes back to where the first change started
        m_at = o->m_at;
        return true;
    }

private:
    std::function<void()> m_undo, m_redo;
    QString m_key;
    qint64 m_at = QDateTime::currentMSecsSinceEpoch();
    bool m_done = false;
};

} // namespace attnviz::ui
