// SPDX-License-Identifier: GPL-3.0-or-later
// Lessons and comparisons in the window: a preset applied (table or model, sentences, settings,
// selection, tab, the Lesson column), the next and previous lesson, the welcome, the slides, and a
// comparison's side A: MainWindow's members for them.
#include "mainwindow.h"

#include "controls/controlpanel.h"
#include "controls/inputpanel.h"
#include "controls/sentenceedit.h"
#include "files/messagetext.h"
#include "live/livesession.h"
#include "style/appearance.h"
#include "teaching/comparison.h"
#include "teaching/lessonpanel.h"
#include "teaching/presets.h"
#include "teaching/seedtables.h"
#include "views/compareview.h"
#include "views/heatmapview.h"
#include "views/patchingview.h"
#include "views/predictionsview.h"
#include "window/lessonslides.h"
#include "window/modelloader.h"
#include "window/windowstate.h"

#include "bundledvectors.h"

#include <QDockWidget>
#include <QFileDialog>
#include <QLabel>
#include <QSettings>
#include <QTabWidget>
#include <QUndoStack>

namespace attnviz::ui {

bool MainWindow::applyPreset(const QString &id)
{
    const Preset *p = findPreset(id);
    if (!p)
        return false;
    m_applyingPreset = true;
    useLessonWeightScale(p->fixedScale);
    if (!p->model.isEmpty()) { // a lesson on a trained model: its own tokens and settings, no table
        QString error;
        if (ModelLoader::canonicalSource(p->model) != m_modelSource && !openModel(p->model, &error)) {
            m_applyingPreset = false;
            m_status->setText(tr("The preset \"%1\" needs %2: %3").arg(p->title, ModelLoader::title(p->model), shownText(error, 300)));
            return false;
        }
    } else {
        if (!m_modelSource.isEmpty())
            useWordVectors(); // the seeds' presets are lessons on the word vectors
        switch (p->table) {
        case PresetTable::Journey:
            setEmbeddingTable(journeyTable(), describeTable(*journeyTable()));
            break;
        case PresetTable::Bloem:
            setEmbeddingTable(bloemTable(), describeTable(*bloemTable()));
            break;
        case PresetTable::Bundled:
            if (!hasBundledEmbeddings()) {
                m_applyingPreset = false;
                m_status->setText(tr("The preset \"%1\" needs the bundled word vectors, which this build does not have.")
                                      .arg(p->title));
                return false;
            }
            if (!m_session->table() || m_session->table()->source() != bundledEmbeddingsName())
                m_state->useBundled();
            break;
        }
    }
    m_keyEdit->setPlainText(p->keySentence);
    m_input->targetEdit()->setPlainText(p->target); // before the sentence: one result for both
    m_session->setAttentionKind(p->attention);
    m_queryEdit->setPlainText(p->sentence);
    if (p->model.isEmpty())
        m_controls->setSettings(p->settings);
    m_session->setSelectedLayer(p->layer);
    m_session->setHeadDisplay(p->display);
    if (p->display == HeadDisplay::One)
        m_session->setSelectedHead(p->head);
    m_session->setSelectedQuery(p->query);
    if (!p->model.isEmpty()) { // a lesson's ablations (none: the edits of the lesson before go)
        std::vector<Intervention> edits;
        for (const auto &[layer, head] : p->ablate) {
            Intervention e;
            e.hook = HookPoint::AttnZ;
            e.layer = layer;
            e.head = head;
            e.kind = EditKind::Zero;
            edits.push_back(e);
        }
        m_session->setEditsShownClean(false);
        m_session->setEdits(edits);
        if (!p->patching.empty())
            patchingView()->setSettings(p->patching);
    }
    // A late result of the text before (a model just opened computes it first) clamps the selection
    // to its tokens: the preset's query is selected again once its own text has its result.
    const SnapshotPtr now = m_session->snapshot();
    auto once = std::make_shared<QMetaObject::Connection>();
    if (!now || now->generation != m_session->generation())
        *once = connect(m_session, &LiveSession::snapshotChanged, this,
                        [this, once, sentence = p->sentence, query = p->query, id = p->id,
                         runPatching = p->runPatching](const SnapshotPtr &s) {
                            if (s->generation != m_session->generation())
                                return;
                            disconnect(*once);
                            if (s->hasResult() && s->sentence == sentence && query < s->tq())
                                m_session->setSelectedQuery(query);
                            if (s->hasResult() && s->sentence == sentence && m_lesson->shownId() == id && runPatching)
                                patchingView()->run();
                        });
    if (!showView(p->view))
        showView(QStringLiteral("weights"));
    if (now && now->generation == m_session->generation() && p->runPatching)
        patchingView()->run(); // the text's result is in: the sweep starts now
    // a model lesson's predictions are about its query (the last token otherwise)
    predictionsView()->setSelectedPosition(p->model.isEmpty() ? -1 : p->query);
    m_lesson->showPreset(p);
    if (auto *dock = findChild<QDockWidget *>(QStringLiteral("lessonDock")))
        dock->show();
    heatmapView()->resetZoom(); // the lesson before may have zoomed
    m_lessonFocus = p->stage.isEmpty() ? QString() : p->id; // applied with the preset's result
    m_lessonZoom = p->zoom.isEmpty() ? QString() : p->id;   // the same (a model's settings may come after)
    m_applyingPreset = false;
    // a lesson starts afresh: undo does not reach into the one before
    m_lastSettings = m_controls->settings();
    m_undo->clear();
    m_maskedWords.clear();
    return true;
}

bool MainWindow::stepLesson(int delta)
{
    const QString id = LessonPanel::neighbourId(m_lesson->shownId(), delta);
    return !id.isEmpty() && applyPreset(id);
}

void MainWindow::showWelcome()
{
    m_lesson->showWelcome();
    if (auto *dock = findChild<QDockWidget *>(QStringLiteral("lessonDock")))
        dock->show();
}

bool MainWindow::welcomeOnFirstStart()
{
    QSettings settings;
    if (settings.value(QStringLiteral("lessons/welcomed")).toBool())
        return false;
    settings.setValue(QStringLiteral("lessons/welcomed"), true);
    showWelcome();
    return true;
}

void MainWindow::setSentence(const QString &text) { m_queryEdit->setPlainText(text); }

void MainWindow::setKeySentence(const QString &text) { m_keyEdit->setPlainText(text); }

void MainWindow::exportLessonSlides()
{
    const QString id = m_lesson->shownId();
    if (id.isEmpty()) {
        if (m_messagePrompt)
            m_messagePrompt(tr("Export lesson as slides"),
                            tr("Choose a lesson first: the Lesson column or the Presets menu."));
        return;
    }
    const QString dir = m_slidesPrompt ? m_slidesPrompt()
                                       : QFileDialog::getExistingDirectory(this, tr("Folder for the slides"));
    if (dir.isEmpty())
        return;
    QString error;
    const QStringList files = writeLessonSlides(*this, id, dir, SlideOptions(), &error);
    m_status->setText(files.isEmpty() ? tr("The slides were not written: %1").arg(shownText(error, 300))
                                      : tr("%1 files written to %2").arg(files.size()).arg(shownText(dir, 300)));
}

void MainWindow::applySide(const CompareSide &side)
{
    if (side.table && side.table != m_session->table())
        setEmbeddingTable(side.table, side.tableDescription.isEmpty() ? describeTable(*side.table) : side.tableDescription);
    m_controls->setSettings(side.settings);
    setKeySentence(side.keySentence);
    setSentence(side.sentence);
}

void MainWindow::useLessonWeightScale(bool fixed)
{
    // the scale the lesson's text reads (View menu ▸ Weights on a fixed 0–1 scale); the colour scale's
    // title says which
    if (AppearanceManager::instance()->appearance().fixedWeights != fixed) {
        Appearance a = AppearanceManager::instance()->appearance();
        a.fixedWeights = fixed;
        AppearanceManager::instance()->setAppearance(a);
    }
}

void MainWindow::startComparison(const ComparisonSpec &spec)
{
    if (!spec.id.isEmpty()) // one of the seeds' comparisons: a lesson
        useLessonWeightScale();
    applySide(spec.a);
    if (spec.selectedQuery >= 0)
        m_session->setSelectedQuery(spec.selectedQuery);
    compareView()->loadSpec(spec);
    m_tabs->setCurrentWidget(compareView());
}

} // namespace attnviz::ui
