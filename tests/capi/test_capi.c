/* The C API from C (app/capi/include/tilefilter/tilefilter.h): a chain from specs, a strided host
 * image filtered on the CPU against a hand-computed result, errors as a code plus the CLI's message,
 * the catalog, and a device pointer refused on a host pointer. Exit 0 = pass. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilefilter/tilefilter.h"

static int failures = 0;
#define CHECK(cond)                                                   \
  do {                                                                \
    if (!(cond)) {                                                    \
      fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                     \
    }                                                                 \
  } while (0)

int main(void) {
  CHECK(tf_api_version() == TF_C_API_VERSION);
  CHECK(strlen(tf_version()) > 0);

  /* A box 3x3 mean of an image that is 1 everywhere but 10 at (2,2): rows 32 bytes apart (padding). */
  const char* specs[] = {"box:radius=1"};
  tf_chain* chain = NULL;
  CHECK(tf_chain_new(specs, 1, &chain) == TF_OK && chain != NULL);
  int halo[4];
  tf_chain_halo(chain, halo);
  CHECK(halo[0] == 1 && halo[1] == 1 && halo[2] == 1 && halo[3] == 1);
  CHECK(strcmp(tf_chain_border(chain, NULL), "reflect101") == 0);

  enum { W = 5, H = 4, PITCH = 32 };
  float src[H * PITCH / 4], dst[H * PITCH / 4];
  for (int i = 0; i < H * PITCH / 4; ++i) src[i] = 1.0f, dst[i] = -1.0f;
  src[2 * PITCH / 4 + 2] = 10.0f;
  tf_image in = {src, PITCH, W, H, 1, TF_F32}, out = {dst, PITCH, W, H, 1, TF_F32};
  tf_options options;
  tf_options_init(&options);
  options.devices = "cpu:2";
  options.exact = 1;
  CHECK(tf_filter(chain, &in, &out, &options) == TF_OK);
  /* (2,2) and its 3x3 neighbourhood: (8 + 10) / 9 = 2; (0,0) sees only ones; the padding is untouched. */
  const float centre = dst[2 * PITCH / 4 + 2], corner = dst[0], pad = dst[W];
  printf("box 3x3: centre %g corner %g\n", centre, corner);
  CHECK(centre > 1.999f && centre < 2.001f);
  CHECK(corner > 0.999f && corner < 1.001f);
  CHECK(pad == -1.0f);

  /* Errors: the CLI's message and a code; the output pointer is left NULL. */
  const char* bad[] = {"gaussian:sigma=banana"};
  tf_chain* none = (tf_chain*)1;
  CHECK(tf_chain_new(bad, 1, &none) == TF_ERR_INVALID_ARGUMENT);
  CHECK(none == NULL);
  CHECK(strstr(tf_last_error(), "gaussian") != NULL);
  printf("bad spec: %s\n", tf_last_error());
  tf_image wrong = out;
  wrong.width = 4;
  CHECK(tf_filter(chain, &in, &wrong, NULL) == TF_ERR_INVALID_ARGUMENT);
  CHECK(tf_filter(chain, &in, &in, NULL) == TF_ERR_INVALID_ARGUMENT); /* in place is refused */
  tf_image_info info;
  CHECK(tf_read_info("/nonexistent/x.png", &info) == TF_ERR_IO);
  printf("missing file: %s\n", tf_last_error());

  /* Options out of range: the CLI's flag and range in the message; streams 0 is "automatic". */
  tf_options checked;
  tf_options_init(&checked);
  checked.devices = "cpu:1";
  checked.streams = 65;
  CHECK(tf_filter(chain, &in, &out, &checked) == TF_ERR_INVALID_ARGUMENT);
  CHECK(strstr(tf_last_error(), "--streams") != NULL && strstr(tf_last_error(), "between 1 and 64") != NULL);
  checked.streams = -1;
  CHECK(tf_filter(chain, &in, &out, &checked) == TF_ERR_INVALID_ARGUMENT);
  checked.streams = 0;
  CHECK(tf_filter(chain, &in, &out, &checked) == TF_OK);
  checked.border = "mirror";
  CHECK(tf_filter(chain, &in, &out, &checked) == TF_ERR_INVALID_ARGUMENT && strstr(tf_last_error(), "--border"));

  /* A host pointer given as a device pointer: refused, whatever the build; a build without CUDA says
   * so by its status. A device image is filtered on GPUs only: CPUs in `devices` are refused. */
  const char* devices = NULL;
  CHECK(tf_devices_json("cpu:2", &devices) == TF_OK && strstr(devices, "cpu1") != NULL);
  const int without_cuda = strstr(devices, "built without CUDA") != NULL;
  const tf_status device = tf_filter_device(chain, &in, &out, 0, NULL, NULL);
  CHECK(device != TF_OK);
  if (without_cuda) CHECK(device == TF_ERR_NO_GPU_BACKEND);
  printf("device path on host memory: %d %s\n", (int)device, tf_last_error());
  tf_options on_cpus;
  tf_options_init(&on_cpus);
  on_cpus.devices = "cpu:2";
  CHECK(tf_filter_device(chain, &in, &out, 0, NULL, &on_cpus) == TF_ERR_INVALID_ARGUMENT);
  CHECK(strstr(tf_last_error(), "cpu:2") != NULL);
  on_cpus.streams = 65;
  on_cpus.devices = NULL;
  CHECK(tf_filter_device(chain, &in, &out, 0, NULL, &on_cpus) == TF_ERR_INVALID_ARGUMENT);
  /* The output may be the input itself (in place), but no other overlap: that is refused before any GPU
   * is asked; the input itself passes that check and fails on its memory (host, not device). */
  tf_image shifted = in;
  shifted.data = (char*)in.data + PITCH;
  shifted.height = H - 1;
  tf_image upper = in;
  upper.height = H - 1;
  CHECK(tf_filter_device(chain, &upper, &shifted, 0, NULL, NULL) == TF_ERR_INVALID_ARGUMENT);
  CHECK(strstr(tf_last_error(), "overlaps the input") != NULL);
  CHECK(tf_filter_device(chain, &in, &in, 0, NULL, NULL) != TF_OK);
  CHECK(strstr(tf_last_error(), "overlaps") == NULL);
  CHECK(tf_filter(chain, &in, &in, NULL) == TF_ERR_INVALID_ARGUMENT && strstr(tf_last_error(), "overlaps"));

  CHECK(strstr(tf_filters_json(), "\"gaussian\"") != NULL);
  tf_chain_free(chain);
  if (failures) return 1;
  printf("C API: all checks passed\n");
  return 0;
}
