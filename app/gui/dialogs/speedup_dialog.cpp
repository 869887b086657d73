#include "speedup_dialog.hpp"

#include <QCloseEvent>
#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QtCharts/QChartView>
#include <QtConcurrent>

#include "panels/message_bar.hpp"
#include "platform/device_hub.hpp"
#include "tilefilter/image/testimage.hpp"
#include "tilefilter/util/error.hpp"
#include "views/speedup_charts.hpp"

namespace tf::gui {

SpeedupDialog::SpeedupDialog(QWidget* parent) : QDialog(parent) {
  setObjectName("speedupDialog");
  setWindowTitle(tr("Speedup demo — when do more devices help?"));
  resize(980, 720);
  auto* layout = new QVBoxLayout(this);
  messages_ = new MessageBar(this);
  layout->addWidget(messages_);

  layout->addWidget(build_setup());

  auto* controls = new QHBoxLayout;
  run_ = new QPushButton(tr("Run"), this);
  run_->setObjectName("speedupRun");
  run_->setDefault(true);
  stop_ = new QPushButton(tr("Cancel"), this);
  stop_->setEnabled(false);
  progress_ = new QProgressBar(this);
  progress_->setObjectName("speedupProgress");
  progress_->setRange(0, 1);
  progress_->setValue(0);
  controls->addWidget(run_);
  controls->addWidget(stop_);
  controls->addWidget(progress_, 1);
  layout->addLayout(controls);

  explanation_ = new QLabel(tr("Run the benchmark to see how the job scales and what bounds it."), this);
  explanation_->setObjectName("speedupExplanation");
  explanation_->setWordWrap(true);
  QFont big = explanation_->font();
  big.setPointSizeF(big.pointSizeF() * 1.15);
  big.setBold(true);
  explanation_->setFont(big);
  // Room for the three lines a long explanation takes, so the charts do not squeeze it.
  explanation_->setMinimumHeight(QFontMetrics(big).lineSpacing() * 3 + 4);
  layout->addWidget(explanation_);

  auto* charts = new QSplitter(Qt::Horizontal, this);
  speedup_view_ = new QChartView(charts);
  speedup_view_->setObjectName("speedupChart");
  speedup_view_->setRenderHint(QPainter::Antialiasing);
  split_view_ = new QChartView(charts);
  split_view_->setObjectName("splitChart");
  split_view_->setRenderHint(QPainter::Antialiasing);
  charts->addWidget(speedup_view_);
  charts->addWidget(split_view_);
  layout->addWidget(charts, 1);

  table_ = new QTableWidget(0, 7, this);
  table_->setObjectName("speedupTable");
  table_->setHorizontalHeaderLabels(
      {tr("Devices"), tr("Median"), tr("Min – max"), tr("Runs · spread"), tr("Mpix/s"), tr("Speedup"), tr("Ideal")});
  table_->verticalHeader()->setVisible(false);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setMaximumHeight(150);
  layout->addWidget(table_);

  connect(run_, &QPushButton::clicked, this, &SpeedupDialog::start);
  connect(stop_, &QPushButton::clicked, this, &SpeedupDialog::cancel);
  connect(&watcher_, &QFutureWatcher<Outcome>::finished, this, &SpeedupDialog::finished);
  connect(&watcher_, &QFutureWatcher<Outcome>::progressValueChanged, progress_, &QProgressBar::setValue);
  connect(&watcher_, &QFutureWatcher<Outcome>::progressRangeChanged, progress_, &QProgressBar::setRange);
  show_result();
}

QGroupBox* SpeedupDialog::build_setup() {
  auto* setup = new QGroupBox(tr("Benchmark"), this);
  auto* form = new QHBoxLayout(setup);
  auto* left = new QFormLayout;
  auto* right = new QFormLayout;
  filter_ = new QComboBox(setup);
  filter_->setObjectName("speedupFilter");
  filter_->setEditable(true);
  filter_->addItems({"gaussian:sigma=2", "gaussian:sigma=8", "box:radius=15", "sharpen", "identity"});
  filter_->setToolTip(tr("A filter spec (as tilefilter --filter); the panel's chain when one is set"));
  left->addRow(tr("Filter"), filter_);
  size_ = new QComboBox(setup);
  size_->setObjectName("speedupSize");
  for (const char* s : {"1024x1024", "2048x2048", "4096x4096", "8192x8192"}) size_->addItem(QString::fromLatin1(s));
  size_->setCurrentIndex(1);
  size_->setEditable(true);
  left->addRow(tr("Image (RGBA u8, host memory)"), size_);
  family_ = new QComboBox(setup);
  family_->setObjectName("speedupFamily");
  family_->addItem(tr("CPU workers"), "cpu");
  auto add_gpus = [this] {
    if (!DeviceHub::instance().gpus().empty() && family_->findData("gpu") < 0)
      family_->insertItem(0, tr("GPUs"), "gpu");
  };
  // Queued, also when discovery ends on this thread: the dialog may open before the GPUs are ready.
  connect(&DeviceHub::instance(), &DeviceHub::discovery_finished, this, add_gpus, Qt::QueuedConnection);
  add_gpus();
  family_->setCurrentIndex(0);
  right->addRow(tr("Devices"), family_);
  count_ = new QSpinBox(setup);
  count_->setObjectName("speedupCount");
  count_->setRange(1, 64);
  right->addRow(tr("Up to"), count_);
  repeats_ = new QSpinBox(setup);
  repeats_->setObjectName("speedupRepeats");
  repeats_->setRange(1, 50);
  repeats_->setValue(5);
  repeats_->setToolTip(tr("Timed runs per device count after one warm-up, more (up to %1) while the middle half "
                          "of them spreads more than %2% around the median; the median is shown")
                           .arg(kMaxRuns)
                           .arg(100 * kSpeedupTargetSpread, 0, 'f', 0));
  right->addRow(tr("Runs each"), repeats_);
  form->addLayout(left, 3);
  form->addLayout(right, 2);
  auto update_count = [this] {
    const bool gpu = family_->currentData() == "gpu";
    const int n = gpu ? static_cast<int>(DeviceHub::instance().gpus().size()) : DeviceHub::instance().cpu_cores();
    count_->setMaximum(gpu ? std::max(1, n) : 64);
    count_->setValue(std::max(1, n));
  };
  connect(family_, &QComboBox::currentIndexChanged, this, update_count);
  update_count();
  return setup;
}

SpeedupDialog::~SpeedupDialog() {
  cancel();
  watcher_.waitForFinished();
}

void SpeedupDialog::set_chain(const ChainSettings& chain) {
  chain_ = chain;
  try {
    const auto specs = to_specs(chain.filters);
    QStringList parts;
    for (const auto& s : specs) parts << QString::fromStdString(s);
    const QString text = parts.join(QStringLiteral(" ; "));
    if (filter_->findText(text) < 0) filter_->insertItem(0, text);
    filter_->setCurrentText(text);
  } catch (const Error&) {
  }
}

void SpeedupDialog::set_devices(const QString& family, int device_count) {
  const int i = family_->findData(family);
  if (i >= 0) family_->setCurrentIndex(i);
  count_->setValue(device_count);
}

void SpeedupDialog::set_image_size(int width, int height) {
  size_->setCurrentText(QStringLiteral("%1x%2").arg(width).arg(height));
}
void SpeedupDialog::set_repeats(int repeats) { repeats_->setValue(repeats); }
QString SpeedupDialog::explanation() const { return QString::fromStdString(result_.explanation); }
QString SpeedupDialog::error_text() const { return messages_->text(); }

void SpeedupDialog::start() {
  if (running()) return;
  messages_->hide();
  std::vector<std::string> specs;
  for (const QString& s : filter_->currentText().split(';', Qt::SkipEmptyParts))
    specs.push_back(s.trimmed().toStdString());
  int w = 0, h = 0;
  const QStringList size = size_->currentText().toLower().split('x');
  if (size.size() == 2) {
    w = size[0].trimmed().toInt();
    h = size[1].trimmed().toInt();
  }
  Chain chain;
  std::vector<DevicePtr> devices;
  try {
    chain = parse_chain(specs);
    if (w < 1 || h < 1 || static_cast<long long>(w) * h > (1LL << 29))
      throw Error(ErrorKind::InvalidArgument, "image size: expected WxH, at most 512 Mpix");
    const QString family = family_->currentData().toString();
    const std::string spec = family == "gpu" ? "gpu" : QStringLiteral("cpu:%1").arg(count_->value()).toStdString();
    devices = DeviceHub::instance().select(spec).devices;
    if (static_cast<int>(devices.size()) > count_->value()) devices.resize(static_cast<std::size_t>(count_->value()));
  } catch (const Error& e) {
    messages_->show_message(MessageBar::Level::Error, QString::fromUtf8(e.what()));
    emit measured(false);
    return;
  }
  cancel_ = std::make_shared<std::atomic<bool>>(false);
  const int repeats = repeats_->value();
  const Border border = chain_.border;
  const QString title =
      tr("Speedup run · %1 · %2×%3 RGBA u8 · %4 devices").arg(filter_->currentText()).arg(w).arg(h).arg(devices.size());
  set_running(true);
  explanation_->setText(tr("Measuring…"));
  QFuture<Outcome> future = QtConcurrent::run([chain, devices, w, h, repeats, border, title,
                                               cancel = cancel_](QPromise<Outcome>& promise) {
    Outcome out;
    out.title = title;
    try {
      const Image src = DeviceHub::in_host_memory(make_test_image(w, h, Format{PixelType::U8, 4}, 7, Pattern::Photo));
      out.pixel_bytes = src.format().pixel_bytes();
      JobOptions options;
      options.border = border;
      std::lock_guard lock(DeviceHub::instance().job_mutex());
      int total = static_cast<int>(devices.size()) * (repeats + 1) + 1;
      promise.setProgressRange(0, total);
      // More runs, up to kMaxRuns, while a device count's runs spread too widely to give a figure.
      out.result = measure_speedup(
          src, chain, devices, options, repeats,
          [&promise, &total](int done, int planned) {
            if (planned + 1 != total) promise.setProgressRange(0, total = planned + 1);
            promise.setProgressValue(done);
          },
          cancel.get(), &DeviceHub::host_allocator(), std::max(repeats, kMaxRuns));
      // One more run on every device, for the panel and the timeline.
      options.cancel = cancel.get();
      out.last_job = std::make_shared<JobReport>();
      Image dst(src.width(), src.height(), src.format(), DeviceHub::host_allocator());
      *out.last_job = run_filter(src.view(), dst.view(), chain, devices, options);
      promise.setProgressValue(total);
    } catch (const Error& e) {
      out.error = e.kind() == ErrorKind::Cancelled ? tr("Cancelled.") : QString::fromUtf8(e.what());
    } catch (const std::bad_alloc&) {
      out.error = tr("Out of memory: choose a smaller image.");
    } catch (const std::exception& e) {
      out.error = QString::fromUtf8(e.what());
    }
    promise.addResult(out);
  });
  watcher_.setFuture(future);
}

void SpeedupDialog::cancel() {
  if (cancel_) cancel_->store(true);
}

void SpeedupDialog::finished() {
  set_running(false);
  const Outcome out = watcher_.future().resultCount() > 0 ? watcher_.result() : Outcome{{}, {}, 0, {}, tr("No result")};
  if (!out.error.isEmpty()) {
    messages_->show_message(MessageBar::Level::Error, out.error);
    explanation_->setText(tr("No measurement."));
    emit measured(false);
    return;
  }
  result_ = out.result;
  show_result();
  if (out.last_job) emit job_finished(job_view(*out.last_job, out.title, out.pixel_bytes));
  emit measured(true);
}

void SpeedupDialog::show_result() {
  for (QChartView* v : {speedup_view_, split_view_}) {
    QChart* old = v->chart();
    QChart* chart = v == speedup_view_ ? make_speedup_chart(result_) : make_split_chart(result_);
    style_chart(chart, palette());
    v->setChart(chart);
    delete old;
  }
  if (!result_.explanation.empty())
    explanation_->setText(result_.noisy ? QString::fromStdString(result_.explanation)
                                        : QStringLiteral("%1 — %2").arg(QString::fromStdString(result_.bound),
                                                                        QString::fromStdString(result_.explanation)));
  table_->setRowCount(static_cast<int>(result_.points.size()));
  for (int i = 0; i < static_cast<int>(result_.points.size()); ++i) {
    const SpeedupPoint& p = result_.points[static_cast<std::size_t>(i)];
    QStringList ids;
    for (const auto& d : p.devices) ids << QString::fromStdString(d);
    const QStringList cells = {QStringLiteral("%1 (%2)").arg(p.device_count).arg(ids.join(QStringLiteral(", "))),
                               QStringLiteral("%1 ms").arg(p.median_s * 1e3, 0, 'f', 2),
                               QStringLiteral("%1 – %2 ms").arg(p.min_s * 1e3, 0, 'f', 2).arg(p.max_s * 1e3, 0, 'f', 2),
                               tr("%1 · %2%").arg(p.runs).arg(100 * p.spread, 0, 'f', 0),
                               QString::number(p.megapixels_per_s, 'f', 0),
                               QStringLiteral("%1×").arg(p.speedup, 0, 'f', 2),
                               QStringLiteral("%1×").arg(p.ideal, 0, 'f', 0)};
    for (int c = 0; c < cells.size(); ++c) table_->setItem(i, c, new QTableWidgetItem(cells[c]));
  }
}

void SpeedupDialog::set_running(bool running) {
  run_->setEnabled(!running);
  stop_->setEnabled(running);
  for (QWidget* w : {static_cast<QWidget*>(filter_), static_cast<QWidget*>(size_), static_cast<QWidget*>(family_),
                     static_cast<QWidget*>(count_), static_cast<QWidget*>(repeats_)})
    w->setEnabled(!running);
}

void SpeedupDialog::closeEvent(QCloseEvent* e) {
  cancel();
  QDialog::closeEvent(e);
}

}  // namespace tf::gui
