// apr-util verifies Apache's legacy password formats ($apr1$ MD5 and {SHA}); only its validation
// function is used. Included by path, because apr-util's pkg-config flags carry defines SwiftPM refuses.
#include <apr-1.0/apr_md5.h>
