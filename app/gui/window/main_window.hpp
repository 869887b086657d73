// The main window: the image view in the middle, the filter panel (left), the device panel (right)
// and the timeline (bottom) as docks, an in-window message bar, menus and a toolbar. Files are
// decoded and encoded off the GUI thread; filters run through the preview engine; Apply is undoable.
#pragma once
#include <QFutureWatcher>
#include <QMainWindow>
#include <QPointer>
#include <atomic>
#include <memory>
#include <optional>
#include <vector>

#include "model/document.hpp"
#include "model/filter_entry.hpp"
#include "model/job_view.hpp"
#include "model/preview_engine.hpp"
#include "tilefilter/io/stream.hpp"

class QLabel;
class QPushButton;
class QProgressBar;
class QTimer;
class QActionGroup;
class QDockWidget;

namespace tf::gui {

class BatchDialog;
class DevicePanel;
class FilterPanel;
class ImageView;
class MessageBar;
class RecentFiles;
class SpeedupDialog;
class TimelineView;
class UtilizationSampler;

struct MainWindowOptions {
  bool use_settings = true;   // restore/save window state, folders, recent files
  bool confirm_close = true;  // ask before closing an image with unsaved changes
};

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(MainWindowOptions options = {}, QWidget* parent = nullptr);
  ~MainWindow() override;

  void open_file(const QString& path);                       // decodes off the GUI thread
  void open_image(const Image& image, const QString& name);  // an image made in memory
  void set_chain(const ChainSettings& chain);
  void set_devices(const QString& spec);
  void apply();
  void save_to(const QString& path, const JpegChoice& jpeg = {});  // encodes off the GUI thread
  BatchDialog* show_batch_dialog();
  SpeedupDialog* show_speedup_dialog();

  ImageDocument* document() { return &document_; }
  FilterPanel* filter_panel() const { return panel_; }
  ImageView* image_view() const { return view_; }
  DevicePanel* device_panel() const { return devices_; }
  TimelineView* timeline() const { return timeline_; }
  MessageBar* message_bar() const { return messages_; }
  PreviewEngine* preview_engine() const { return engine_; }
  bool loading() const { return load_watcher_.isRunning(); }
  bool idle() const;  // nothing loading, previewing, applying or saving
  // The last full-resolution preview, when it belongs to the chain and image shown now.
  const PreviewResult* current_full_result() const;
  // What the quit prompt lists: applied steps not saved (or saved ones undone since) and, when closing,
  // a chain in the panel never applied; "" when nothing would be lost.
  QString unsaved_text(bool closing) const;
  // Where Save As starts: the last folder saved to, else the image's (not the bundled samples).
  QString save_folder() const;
  // `window` moved and shrunk to lie within `available` (a screen's, less its panels).
  static QRect within_screen(QRect window, const QRect& available);

 signals:
  void image_loaded(const QString& name);
  void load_failed(const QString& message);
  void preview_shown(tf::gui::PreviewPass pass, double latency_ms);
  void applied();
  void saved(const QString& path);
  void became_idle();

 protected:
  void closeEvent(QCloseEvent*) override;
  void dragEnterEvent(QDragEnterEvent*) override;
  void dropEvent(QDropEvent*) override;

 private:
  // main_window.cpp: layout, preview, state
  void build_docks();
  void build_status_bar();
  void size_timeline();               // a lane per GPU stream: taller once there are GPUs
  void show_job(const JobView& job);  // in the device panel and the timeline, every lane in view
  void request_preview();
  void on_result(const PreviewResult& result);
  void on_document_changed();
  void update_title();
  void show_error(const QString& message);
  void show_info(const QString& message);
  void show_pixel(QPoint pos, bool inside);
  void restore_settings();
  void save_settings();
  void finish_apply(const PreviewResult& full);
  void check_idle();
  // main_window_large.cpp: documents that stay on disk (LargeSource)
  void save_large(const QString& path, const JpegChoice& jpeg);
  void finish_save_large();
  void apply_large(const ChainSettings& chain);  // streams the chain into a file of the document
  void show_stream_job(const StreamReport& report, const QString& what);
  bool file_in_use(const QString& path) const;  // by the document or a step of its undo stack
  void setup_large_view();
  void chain_changed_for_detail();  // a new chain: the filtered region shown is out of date
  void request_detail();            // the visible region at full resolution, when zoomed past the overview
  void show_detail();
  void start_streaming(const QString& message);  // progress bar and Cancel for a streaming job
  ChainSettings preview_chain(const ChainSettings& chain) const;
  void connect_preview();  // the engine, the panel and the view
  void connect_jobs();     // open, save and Apply off the GUI thread
  void on_loaded();
  void on_saved();
  void on_applied();
  void clear_error();  // a success: an error or warning shown is out of date
  void remember_save_folder(const QString& path);
  // main_window_actions.cpp: menus, toolbar, file and preset actions
  void build_actions();
  void build_file_menu();
  void build_edit_menu();
  void build_view_menu();
  void build_filters_menu();
  void build_toolbar();
  void update_actions();  // enabled only with an image
  void open_dialog();
  void save();
  void save_as();
  void load_preset_dialog();
  void save_preset_dialog();
  void load_preset(const QString& path);
  void populate_samples(QMenu* menu);
  bool confirm_discard(bool closing = false);

  MainWindowOptions options_;
  ImageDocument document_;
  PreviewEngine* engine_ = nullptr;
  ImageView* view_ = nullptr;
  FilterPanel* panel_ = nullptr;
  DevicePanel* devices_ = nullptr;
  TimelineView* timeline_ = nullptr;
  QDockWidget* timeline_dock_ = nullptr;
  std::optional<bool> timeline_for_gpus_;  // what size_timeline() sized it for
  MessageBar* messages_ = nullptr;
  UtilizationSampler* sampler_ = nullptr;
  RecentFiles* recent_ = nullptr;
  QPointer<BatchDialog> batch_;
  QPointer<SpeedupDialog> speedup_;

  QLabel* pixel_label_ = nullptr;
  QLabel* zoom_label_ = nullptr;
  QLabel* timing_label_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QPushButton* cancel_save_ = nullptr;  // shown while a large document streams to its file
  QTimer* view_timer_ = nullptr;        // re-plans an unfinished preview after zooming or panning
  struct Actions {
    QAction *open = nullptr, *save = nullptr, *save_as = nullptr, *apply = nullptr, *batch = nullptr,
            *speedup = nullptr, *fit = nullptr, *actual = nullptr, *compare = nullptr;
    std::vector<QAction*> zoom;
  } actions_;
  QString last_save_folder_;  // this session's, also without settings
  QAction* undo_action_ = nullptr;
  QAction* redo_action_ = nullptr;
  QActionGroup* compare_group_ = nullptr;

  struct Loaded {
    QString path, name;
    DocumentState state;
    QString error;
  };
  QFutureWatcher<Loaded> load_watcher_;
  QFutureWatcher<QString> save_watcher_;  // the error, empty on success
  struct Applied {
    // Shared with the watcher's copy of the result, so that taking the state out empties both: a
    // large document's result file then goes with the last step that uses it, not with the watcher.
    std::shared_ptr<DocumentState> state = std::make_shared<DocumentState>();
    QString error;
    QString text;                          // large documents: the chain's specs
    std::shared_ptr<StreamReport> stream;  // large documents: the streamed job
  };
  QFutureWatcher<Applied> apply_watcher_;
  struct Detail {
    std::weak_ptr<const LargeSource> source;  // not kept alive by the watcher's copy of the result
    ChainSettings chain;                      // what `after` was filtered with
    QImage before, after;
    QRectF shown;  // overview pixels
    QString error;
    double read_ms = 0, filter_ms = 0;
    std::shared_ptr<const JobReport> report;  // of the filter job, for the timeline
    int pixel_bytes = 0;
  };
  QFutureWatcher<Detail> detail_watcher_;
  QTimer* detail_timer_ = nullptr;                    // reads the region once zooming or panning pauses
  bool detail_again_ = false;                         // the view or the chain changed while a region was read
  std::shared_ptr<std::atomic<bool>> detail_cancel_;  // of the region in flight
  std::optional<ChainSettings> detail_chain_;         // of the filtered region shown, if any
  int temp_files_ = 0;                                // files made for this window's large Apply
  QString saving_path_;
  std::shared_ptr<std::atomic<bool>> save_cancel_;  // of the streaming save or Apply in flight
  std::shared_ptr<StreamReport> stream_report_;     // its report, once it succeeded

  std::optional<PreviewResult> full_;  // last full result of the current request
  quint64 requested_ = 0;              // generation of the latest preview request
  bool preview_pending_ = false;       // requested and its full pass not shown yet
  bool apply_pending_ = false;         // Apply waits for the full pass
  double first_latency_ms_ = -1;       // of the current request's first pass shown
  JpegChoice save_jpeg_;               // the last Save As choice; like the input until then
  ChainSettings apply_chain_;
  QString apply_text_;             // the applied chain's specs, for the undo entry
  ChainSettings requested_chain_;  // what the latest request filters
};

}  // namespace tf::gui
