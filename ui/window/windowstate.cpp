// SPDX-License-Identifier: GPL-3.0-or-later
#include "window/windowstate.h"
#include "attnviz/encoderdecoder.h"
#include "window/viewrouter.h"

#include "controls/controlpanel.h"
#include "controls/inputpanel.h"
#include "controls/sentenceedit.h"
#include "controls/stackcontrols.h"
#include "files/messagetext.h"
#include "live/livecompute.h"
#include "live/livesession.h"
#include "live/stackcompute.h"
#include "mainwindow.h"
#include "style/appearance.h"
#include "teaching/comparison.h"
#include "teaching/lessonpanel.h"
#include "teaching/presets.h"
#include "teaching/seedtables.h"
#include "views/compareview.h"
#include "views/heatmapview.h"
#include "views/linesview.h"
#include "views/patchingview.h"
#include "views/alignmentview.h"

#include "bundledvectors.h"

#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QFutureWatcher>
#include <QProgressDialog>
#include <QSettings>
#include <QTabWidget>
#include <QTimer>
#include <QtConcurrent/QtConcurrentRun>

#include <atomic>

namespace attnviz::ui {

WindowState::WindowState(MainWindow *window)
    : QObject(window)
    , m_w(window)
{
}

void WindowState::setEmbeddingTable(std::shared_ptr<const EmbeddingTable> table, const QString &description)
{
    const QString seed = seedTableName(table);
    setTableFrom(std::move(table), description, seed.isEmpty() ? TableKind::Unsaved : TableKind::Seed, seed);
}

void WindowState::setTableFrom(std::shared_ptr<const EmbeddingTable> table, const QString &description, TableKind kind,
                              const QString &pathOrName)
{
    m_tableKind = kind;
    m_tablePath = kind == TableKind::File ? pathOrName : QString();
    m_tableName = kind == TableKind::Seed ? pathOrName : QString();
    m_w->controls()->setDModel(table ? table->dim() : 0);
    m_w->controls()->setTableDescription(description);
    m_w->session()->setTable(std::move(table));
    emit changed();
}

void WindowState::useBundled()
{
    Status st;
    const std::shared_ptr<const EmbeddingTable> t = sharedBundledEmbeddings(&st);
    if (!t) {
        m_w->controls()->setTableDescription(QString::fromStdString(st.message));
        return;
    }
    setTableFrom(t, describeTable(*t), TableKind::Bundled, QString());
}

bool WindowState::loadEmbeddingsFile(const QString &path, QString *error)
{
    auto t = std::make_shared<EmbeddingTable>();
    const Status st = loadEmbeddings(path.toStdString(), *t);
    if (!st.ok() || t->empty()) {
        if (error)
            *error = st.ok() ? tr("%1: the file holds no vectors").arg(path) : QString::fromStdString(st.message);
        return false;
    }
    setTableFrom(t, describeTable(*t), TableKind::File, QFileInfo(path).absoluteFilePath());
    return true;
}

void WindowState::startLoadEmbeddings()
{
    if (m_loading)
        return;
    QSettings settings;
    const QString path = QFileDialog::getOpenFileName(
        m_w, tr("Load embeddings"), settings.value(QStringLiteral("embeddings/lastDir")).toString(),
        tr("Word vectors (*.txt *.vec *.bin *.avec);;All files (*)"));
    if (path.isEmpty())
        return;
    settings.setValue(QStringLiteral("embeddings/lastDir"), QFileInfo(path).absolutePath());
    m_loading = true;
    auto *dialog = new QProgressDialog(tr("Reading %1…").arg(QFileInfo(path).fileName()), tr("Cancel"), 0, 1000, m_w);
    dialog->setWindowModality(Qt::WindowModal);
    dialog->setMinimumDuration(300);
    auto cancel = std::make_shared<std::atomic<bool>>(false);
    auto fraction = std::make_shared<std::atomic<int>>(0);
    connect(dialog, &QProgressDialog::canceled, this, [cancel] { cancel->store(true); });
    auto *poll = new QTimer(dialog);
    connect(poll, &QTimer::timeout, dialog, [dialog, fraction] { dialog->setValue(fraction->load()); });
    poll->start(100);
    auto *watcher = new QFutureWatcher<std::pair<Status, std::shared_ptr<EmbeddingTable>>>(this);
    connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, dialog, path] {
        const auto [st, table] = watcher->result();
        watcher->deleteLater();
        dialog->deleteLater();
        m_loading = false;
        if (st.code == StatusCode::Cancelled)
            return;
        if (!st.ok() || !table || table->empty()) {
            warnPlain(m_w, tr("Cannot load embeddings"),
                      tr("%1\n\nThe current table stays in use.")
                          .arg(shownText(st.ok() ? tr("%1 holds no vectors").arg(path) : QString::fromStdString(st.message))));
            return;
        }
        setTableFrom(table, describeTable(*table), TableKind::File, QFileInfo(path).absoluteFilePath());
    });
    watcher->setFuture(QtConcurrent::run([path, cancel, fraction] {
        auto t = std::make_shared<EmbeddingTable>();
        const Status st = loadEmbeddings(path.toStdString(), *t, EmbeddingFormat::Auto, [&](double f) {
            if (f >= 0)
                fraction->store(int(f * 1000));
            return !cancel->load();
        });
        return std::make_pair(st, t);
    }));
}

bool WindowState::loadStackWeightsFile(const QString &path, QString *error)
{
    auto w = std::make_shared<StackWeights<float>>();
    int depth = 0;
    if (!attnviz::ui::loadStackWeightsFile(path, *w, depth, error))
        return false;
    m_stackWeightsPath = QFileInfo(path).absoluteFilePath();
    m_w->controls()->stackControls()->setLoadedWeights(w, depth, QFileInfo(path).fileName());
    return true;
}

bool WindowState::loadProjectionsFile(const QString &path, QString *error)
{
    auto p = std::make_shared<Projections<float>>();
    const Status st = attnviz::ui::loadProjectionsFile(path, *p);
    if (!st.ok()) {
        if (error)
            *error = QString::fromStdString(st.message);
        return false;
    }
    m_projectionsPath = QFileInfo(path).absoluteFilePath();
    m_w->controls()->setLoadedProjections(p, QFileInfo(path).fileName());
    return true;
}

void WindowState::askProjectionsFile()
{
    const QString path = QFileDialog::getOpenFileName(m_w, tr("Load projections"), QString(),
                                                      tr("Projection weights (*.json)"));
    QString error;
    if (!path.isEmpty() && !loadProjectionsFile(path, &error))
        warnPlain(m_w, tr("Cannot load projections"), shownText(error));
}

void WindowState::askStackWeightsFile()
{
    const QString path = QFileDialog::getOpenFileName(m_w, tr("Load stack weights"), QString(),
                                                      tr("safetensors, GPT-2 names (*.safetensors);;All files (*)"));
    QString error;
    if (!path.isEmpty() && !loadStackWeightsFile(path, &error))
        warnPlain(m_w, tr("Cannot load weights"), tr("%1\n\nThe current weights stay in use.").arg(shownText(error)));
}

SessionState WindowState::capture() const
{
    SessionState s;
    s.sentence = m_w->sentenceEdit()->toPlainText();
    s.keySentence = m_w->keySentenceEdit()->toPlainText();
    s.target = m_w->inputPanel()->targetEdit()->toPlainText();
    s.beams = m_w->inputPanel()->encoderDecoder() ? m_w->inputPanel()->beams() : 0;
    if (Seq2SeqLanguages l; m_w->session()->model() && seq2seqLanguages(*m_w->session()->model(), l).ok() && !l.codes.empty()) {
        s.sourceLanguage = QString::fromStdString(l.source);
        s.targetLanguage = QString::fromStdString(l.target);
    }
    s.attention = m_w->session()->attentionKind();
    s.paddedKeys = m_w->session()->paddedKeys();
    s.customMask = m_w->session()->customMask();
    s.settings = m_w->controls()->settings();
    s.tableKind = m_tableKind;
    s.tablePath = m_tablePath;
    s.tableName = m_tableName;
    s.projectionsFile = m_projectionsPath;
    s.stackWeightsFile = m_stackWeightsPath;
    s.model = m_w->modelSource();
    s.tab = m_w->currentViewId();
    s.headDisplay = m_w->session()->headDisplay();
    s.selectedHead = m_w->session()->selectedHead();
    s.selectedQuery = m_w->session()->selectedQuery();
    s.layer = m_w->session()->selectedLayer();
    s.showNumbers = m_w->controls()->showNumbers();
    s.linesThreshold = m_w->linesView()->threshold();
    s.linesScaleRows = m_w->linesView()->scaleRows();
    s.normWeighted = m_w->views()->normWeighted();
    s.meanPooling = m_w->heatmapView()->pooling() == Pooling::Mean;
    // a patch (the Patching tab's, EditKind::Value) is not kept: the session holds the clean prompt
    s.ablations.clear();
    for (const Intervention &e : m_w->session()->edits())
        if (e.kind != EditKind::Value)
            s.ablations.push_back(e);
    s.patching = m_w->patchingView()->settings();
    s.alignment = m_w->alignmentView()->settings();
    if (m_w->patchingView()->patchApplied())
        s.sentence = m_w->patchingView()->cleanPrompt();
    s.ablationsShownClean = m_w->session()->editsShownClean();
    s.lesson = m_w->lessonPanel()->currentId();
    s.appearance = AppearanceManager::instance()->appearance();
    if (m_w->compareView()->hasSideB()) {
        const CompareSide b = m_w->compareView()->sideB();
        s.compare.present = true;
        s.compare.sentence = b.sentence;
        s.compare.keySentence = b.keySentence;
        s.compare.settings = b.settings;
        s.compare.settings.loadedProjections = nullptr;
        s.compare.seedTable = b.table ? seedTableName(b.table) : QString();
    }
    return s;
}

void WindowState::apply(const SessionState &in, QStringList *problems)
{
    QStringList lines;
    SessionState s = in;
    const auto inUse = [this] {
        const auto t = m_w->session()->table();
        return t ? tr("the table in use stays: %1").arg(describeTable(*t)) : tr("no table is in use");
    };

    // The table.
    switch (s.tableKind) {
    case TableKind::Unsaved: break;
    case TableKind::Bundled:
        if (m_tableKind == TableKind::Bundled)
            break;
        if (!hasBundledEmbeddings())
            lines << tr("table: this build has no bundled word vectors; %1").arg(inUse());
        else
            useBundled();
        break;
    case TableKind::File: {
        const QString path = QFileInfo(s.tablePath).absoluteFilePath();
        if (m_tableKind == TableKind::File && m_tablePath == path)
            break;
        QString error;
        if (!QFileInfo::exists(path))
            lines << tr("table.path: the embeddings file %1 is missing; %2").arg(path, inUse());
        else if (!loadEmbeddingsFile(path, &error))
            lines << tr("table.path: %1; %2").arg(error, inUse());
        break;
    }
    case TableKind::Seed:
        if (const auto t = seedTableByName(s.tableName))
            setTableFrom(t, describeTable(*t), TableKind::Seed, s.tableName);
        break;
    }

    // The sentences (a new key sentence clears the padding and the custom mask: set before them).
    m_w->setKeySentence(s.keySentence);
    m_w->setSentence(s.sentence);
    m_w->inputPanel()->targetEdit()->setPlainText(s.target);
    m_w->session()->setAttentionKind(s.attention);

    // The weight files, before the settings that select them.
    if (!s.projectionsFile.isEmpty()) {
        const QString path = QFileInfo(s.projectionsFile).absoluteFilePath();
        QString error;
        const bool ok = path == m_projectionsPath
            || (QFileInfo::exists(path) ? loadProjectionsFile(path, &error)
                                        : (error = tr("the file %1 is missing").arg(path), false));
        if (!ok) {
            lines << tr("projectionsFile: %1; %2").arg(error,
                                                        s.settings.projection == ProjectionMode::File
                                                            ? tr("identity projections are used instead")
                                                            : tr("no projections file is loaded"));
            if (s.settings.projection == ProjectionMode::File)
                s.settings.projection = ProjectionMode::Identity;
            m_projectionsPath.clear();
            m_w->controls()->setLoadedProjections(nullptr, QString());
        }
    } else {
        if (s.settings.projection == ProjectionMode::File) {
            lines << tr("settings.projection: \"file\" but the session names no projectionsFile; identity "
                        "projections are used instead");
            s.settings.projection = ProjectionMode::Identity;
        }
        if (!m_projectionsPath.isEmpty()) {
            m_projectionsPath.clear();
            m_w->controls()->setLoadedProjections(nullptr, QString());
        }
    }
    if (!s.stackWeightsFile.isEmpty()) {
        const QString path = QFileInfo(s.stackWeightsFile).absoluteFilePath();
        QString error;
        const bool ok = path == m_stackWeightsPath
            || (QFileInfo::exists(path) ? loadStackWeightsFile(path, &error)
                                        : (error = tr("the file %1 is missing").arg(path), false));
        if (!ok) {
            lines << tr("stackWeightsFile: %1; %2").arg(error,
                                                         s.settings.stack.source == StackWeightsSource::File
                                                             ? tr("seeded stack weights are used instead")
                                                             : tr("no stack weights file is loaded"));
            if (s.settings.stack.source == StackWeightsSource::File)
                s.settings.stack.source = StackWeightsSource::Seeded;
            m_stackWeightsPath.clear();
            m_w->controls()->stackControls()->setLoadedWeights(nullptr, 0, QString());
        }
    } else {
        if (s.settings.stack.source == StackWeightsSource::File) {
            lines << tr("settings.stack.source: \"file\" but the session names no stackWeightsFile; seeded "
                        "weights are used instead");
            s.settings.stack.source = StackWeightsSource::Seeded;
        }
        if (!m_stackWeightsPath.isEmpty()) {
            m_stackWeightsPath.clear();
            m_w->controls()->stackControls()->setLoadedWeights(nullptr, 0, QString());
        }
    }

    // Every control (the loaded weights stay those just read), the masks, the view.
    s.settings.loadedProjections = nullptr;
    s.settings.stack.loaded = nullptr;
    m_w->controls()->setSettings(s.settings);
    // The model, after the controls (it fixes the head count); a folder that cannot be read leaves the
    // word vectors in use.
    if (s.model != m_w->modelSource()) {
        QString error;
        if (s.model.isEmpty()) {
            m_w->useWordVectors();
        } else if (!m_w->openModel(s.model, &error)) {
            lines << tr("model: %1; the word vectors are used instead").arg(error);
            m_w->useWordVectors();
        }
    }
    if (s.beams > 0) // after the model, whose folder sets its own default
        m_w->inputPanel()->setBeams(s.beams);
    if (!s.sourceLanguage.isEmpty() || !s.targetLanguage.isEmpty()) { // an mBART folder's, after it opened
        Seq2SeqLanguages now;
        const std::shared_ptr<Model> &model = m_w->session()->model();
        if (model)
            seq2seqLanguages(*model, now);
        const std::string source = s.sourceLanguage.isEmpty() ? now.source : s.sourceLanguage.toStdString();
        const std::string target = s.targetLanguage.isEmpty() ? now.target : s.targetLanguage.toStdString();
        if (!model) {
            lines << tr("input.sourceLanguage, input.targetLanguage: the word vectors read no language codes; left out");
        } else if (Status st = setSeq2SeqLanguages(*model, source, target); !st) {
            lines << tr("input.sourceLanguage, input.targetLanguage: %1; the folder's are used")
                         .arg(QString::fromStdString(st.message));
        } else {
            QStringList codes;
            for (const std::string &c : now.codes)
                codes << QString::fromStdString(c);
            m_w->inputPanel()->setLanguages(codes, QString::fromStdString(source), QString::fromStdString(target));
            m_w->session()->requestNow();
        }
    }
    m_w->session()->setPaddedKeys(s.paddedKeys);
    m_w->session()->setCustomMask(s.customMask);
    // The head ablations, checked against the model now in use (a session opened: not an undo step)
    std::vector<Intervention> ablations;
    if (!s.ablations.empty()) {
        const ModelInfo &info = m_w->modelInfo();
        const QString refusal = editsRefusal(info, m_w->session()->model() != nullptr);
        if (!refusal.isEmpty())
            lines << tr("ablations: %1; the model is shown without them").arg(refusal);
        else if (const Status st = checkEdits(s.ablations, info.layers, info.heads, info.dModel, info.dHead, 1); !st)
            lines << tr("ablations: %1; the model is shown without them").arg(QString::fromStdString(st.message));
        else
            ablations = s.ablations;
    }
    m_w->session()->setEdits(ablations);
    m_w->patchingView()->setSettings(s.patching);
    m_w->alignmentView()->setSettings(s.alignment);
    m_w->session()->setEditsShownClean(s.ablationsShownClean);
    m_w->controls()->setShowNumbers(s.showNumbers);
    const int heads = m_w->controls()->settings().numHeads; // a model's own count once it is open
    if (s.selectedHead >= heads)
        lines << tr("view.selectedHead: %1 is not a head of %2; head 0 is shown").arg(s.selectedHead).arg(heads);
    else
        m_w->session()->setSelectedHead(s.selectedHead);
    m_w->session()->setHeadDisplay(s.headDisplay);
    m_w->session()->setSelectedQuery(s.selectedQuery);
    const bool model = m_w->session()->model() != nullptr;
    const int layers = model ? std::max(1, m_w->modelInfo().layers) : s.settings.stack.depth;
    if (s.layer >= layers)
        lines << (model ? tr("view.layer: %1 is not a layer of the %2-layer model; layer 0 is shown")
                        : tr("view.layer: %1 is not a layer of a %2-layer stack; layer 0 is shown"))
                     .arg(s.layer)
                     .arg(layers);
    else {
        m_w->session()->setSelectedLayer(s.layer);
        m_w->controls()->stackControls()->setShownLayer(s.layer);
        m_w->controls()->setLayerCount(layers);
        m_w->controls()->setShownLayer(s.layer);
    }
    QWidget *tab = m_w->viewWidget(s.tab);
    if (m_w->tabs()->isTabVisible(m_w->tabs()->indexOf(tab)))
        m_w->tabs()->setCurrentWidget(tab);
    else {
        m_w->tabs()->setCurrentWidget(m_w->heatmapView());
        lines << tr("view.tab: \"%1\" is a stack view and the session has no stack (depth 1); the weights are shown")
                     .arg(s.tab);
    }
    m_w->linesView()->setThreshold(s.linesThreshold);
    m_w->linesView()->setScaleRows(s.linesScaleRows);
    m_w->views()->setNormWeighted(s.normWeighted);
    m_w->heatmapView()->setPooling(s.meanPooling ? Pooling::Mean : Pooling::Max);
    // The lesson text, the appearance, the Compare tab's side B.
    if (s.lesson.isEmpty())
        m_w->lessonPanel()->showPreset(nullptr);
    else if (const Preset *p = findPreset(s.lesson)) {
        m_w->lessonPanel()->showPreset(p);
        if (auto *dock = m_w->findChild<QDockWidget *>(QStringLiteral("lessonDock")))
            dock->show();
    }
    else
        lines << tr("lesson: this attnviz has no preset \"%1\"; the Lesson column is left empty").arg(s.lesson);
    AppearanceManager::instance()->setAppearance(s.appearance);
    if (s.compare.present) {
        CompareSide b;
        b.sentence = s.compare.sentence;
        b.keySentence = s.compare.keySentence;
        b.settings = s.compare.settings;
        b.table = seedTableByName(s.compare.seedTable);
        if (b.settings.projection == ProjectionMode::File) {
            lines << tr("compare.settings.projection: side B cannot load a projections file; identity is used");
            b.settings.projection = ProjectionMode::Identity;
        }
        m_w->compareView()->setSideB(b);
    }
    emit changed();
    if (problems)
        *problems << lines;
}

} // namespace attnviz::ui
