/*
 * libqrencode, loaded the first time a QR code is drawn (enrolling a one-time code, a device login)
 * rather than when the program starts (see gatekeeper_library.h).
 *
 * gk_QRcode_encodeString and gk_QRcode_free have libqrencode's signatures and call its functions; if it
 * cannot be loaded no code is made (NULL), and gatekeeper_qrencode_load says why.
 */
#ifndef GATEKEEPER_QRENCODE_H
#define GATEKEEPER_QRENCODE_H

#include <qrencode.h>

int gatekeeper_qrencode_load(const char **error);

QRcode *gk_QRcode_encodeString(const char *string, int version, QRecLevel level, QRencodeMode hint, int casesensitive);
void gk_QRcode_free(QRcode *qrcode);

#endif
