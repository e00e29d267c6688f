#include "gatekeeper_qrencode.h"

#include "gatekeeper_library.h"

#define QRENCODE_FUNCTIONS(X) X(QRcode_encodeString) X(QRcode_free)
GATEKEEPER_LIBRARY(qrencode, "libqrencode.so.4", "the QR code library", QRENCODE_FUNCTIONS)

QRcode *gk_QRcode_encodeString(const char *string, int version, QRecLevel level, QRencodeMode hint, int casesensitive) {
    return gatekeeper_qrencode_load(NULL) == 0
               ? qrencode_library.call.QRcode_encodeString(string, version, level, hint, casesensitive)
               : NULL;
}

void gk_QRcode_free(QRcode *qrcode) {
    if (qrcode != NULL && gatekeeper_qrencode_load(NULL) == 0) qrencode_library.call.QRcode_free(qrcode);
}
