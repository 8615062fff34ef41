/* DCMI for ipmi_sim: answers Get Power Reading (group extension 0xDC, command 0x02) from a
 * text file that holds the host's current watts (written by its wattdb-host agent).
 * Loaded by an emulated host's BMC: loadlib "<path>/wattdb_dcmi.so" "<watts file>". */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <OpenIPMI/mcserv.h>
#include <OpenIPMI/serv.h>

static char watts_path[4096];
static unsigned wmin = 0xffff, wmax, samples;
static double wsum;

static void put16(unsigned char* p, unsigned v) {
  p[0] = v & 0xff;
  p[1] = (v >> 8) & 0xff;
}

static void put32(unsigned char* p, unsigned long v) {
  for (int i = 0; i < 4; i++) p[i] = (v >> (8 * i)) & 0xff;
}

static int read_watts(unsigned* w) {
  FILE* f = fopen(watts_path, "r");
  double d = 0;
  int ok = f && fscanf(f, "%lf", &d) == 1 && d >= 0 && d < 65535;
  if (f) fclose(f);
  if (ok) *w = (unsigned)(d + 0.5);
  return ok;
}

static void dcmi_handler(lmc_data_t* mc, msg_t* msg, unsigned char* rdata, unsigned int* rdata_len,
                         void* cb) {
  unsigned w;
  (void)mc;
  (void)cb;
  if (msg->cmd != 0x02) {
    rdata[0] = 0xC1; /* invalid command */
    *rdata_len = 1;
    return;
  }
  if (!read_watts(&w)) {
    rdata[0] = 0xD5; /* command not supported in present state: no reading available */
    *rdata_len = 1;
    return;
  }
  if (w < wmin) wmin = w;
  if (w > wmax) wmax = w;
  wsum += w;
  samples++;
  rdata[0] = 0;
  rdata[1] = 0xDC;
  put16(rdata + 2, w);
  put16(rdata + 4, wmin);
  put16(rdata + 6, wmax);
  put16(rdata + 8, (unsigned)(wsum / samples + 0.5));
  put32(rdata + 10, (unsigned long)time(NULL));
  put32(rdata + 14, 1000);
  rdata[18] = 0x40; /* power measurement active */
  *rdata_len = 19;
}

int ipmi_sim_module_print_version(sys_data_t* sys, char* initstr) {
  (void)sys;
  (void)initstr;
  return 0;
}

int ipmi_sim_module_init(sys_data_t* sys, const char* initstr) {
  if (!initstr || !*initstr) return EINVAL;
  strncpy(watts_path, initstr, sizeof(watts_path) - 1);
  ipmi_emu_register_group_extension_handler(0xDC, dcmi_handler, sys);
  return 0;
}
