/*
 * A slow key store for the tests (test/pkcs11-signer.test.ts): a PKCS#11 module that forwards
 * every call to SoftHSM2 (SLOW_PKCS11_TARGET) and makes C_Sign wait first, for the number of
 * milliseconds in the file SLOW_PKCS11_DELAY_FILE (read on each call, so a test changes it while
 * the broker runs; absent or unreadable: no wait); with SLOW_PKCS11_RAW_ONLY set it offers only
 * CKM_RSA_PKCS for signing. Built by test/support/softhsm.ts with cc.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CK_PTR *
#define CK_DECLARE_FUNCTION(returnType, name) returnType name
#ifndef NULL_PTR
#define NULL_PTR 0
#endif
#include "pkcs11.h"

static CK_FUNCTION_LIST_PTR target = NULL;
static CK_FUNCTION_LIST own;

static void wait_configured(void) {
  const char *file = getenv("SLOW_PKCS11_DELAY_FILE");
  if (!file) return;
  FILE *f = fopen(file, "r");
  if (!f) return;
  long ms = 0;
  if (fscanf(f, "%ld", &ms) != 1) ms = 0;
  fclose(f);
  if (ms <= 0) return;
  struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
  nanosleep(&t, NULL);
}

/* With SLOW_PKCS11_RAW_ONLY set, only CKM_RSA_PKCS signs (as Cloud KMS's kmsp11): any other mechanism is refused. */
static CK_RV raw_only_sign_init(CK_SESSION_HANDLE s, CK_MECHANISM_PTR mechanism, CK_OBJECT_HANDLE key) {
  if (getenv("SLOW_PKCS11_RAW_ONLY") && mechanism->mechanism != CKM_RSA_PKCS) return CKR_MECHANISM_INVALID;
  return target->C_SignInit(s, mechanism, key);
}

static CK_RV slow_sign(CK_SESSION_HANDLE s, CK_BYTE_PTR data, CK_ULONG len, CK_BYTE_PTR sig, CK_ULONG_PTR siglen) {
  wait_configured();
  return target->C_Sign(s, data, len, sig, siglen);
}

CK_RV C_GetFunctionList(CK_FUNCTION_LIST_PTR_PTR list) {
  if (!target) {
    const char *path = getenv("SLOW_PKCS11_TARGET");
    void *lib = dlopen(path ? path : "/usr/lib/softhsm/libsofthsm2.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return CKR_GENERAL_ERROR;
    CK_RV (*get)(CK_FUNCTION_LIST_PTR_PTR) = (CK_RV (*)(CK_FUNCTION_LIST_PTR_PTR))dlsym(lib, "C_GetFunctionList");
    if (!get) return CKR_GENERAL_ERROR;
    CK_RV rv = get(&target);
    if (rv != CKR_OK) return rv;
    memcpy(&own, target, sizeof own);
    own.C_Sign = slow_sign;
    own.C_SignInit = raw_only_sign_init;
  }
  *list = &own;
  return CKR_OK;
}
