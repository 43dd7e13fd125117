#pragma once

/* Test keys made for airlock's unit tests by OpenSSH 9.2's ssh-keygen: Ed25519 without a
 * passphrase ("plain@airlock"), and Ed25519, ECDSA P-256 and RSA 1024 with the passphrase
 * "correct horse"; ECDSA P-256, P-384, P-521 and RSA 3072 without one ("ecdsa256@airlock",
 * ..., "rsa3072@airlock"), the user keys of the logins in tests/fuzz/corpus/ssh-agent/. Their
 * fingerprints are what ssh-keygen -l prints (KEY_*_FP). Throwaway keys: nothing trusts them. */

#define KEY_ED25519_PLAIN                                                                          \
	"-----BEGIN OPENSSH PRIVATE KEY-----\n"                                                    \
	"b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"                 \
	"QyNTUxOQAAACCMJc13YBJ9mdDDXiXuXP59kW7hfj760NPNslj0WqlCngAAAJClIbzrpSG8\n"                 \
	"6wAAAAtzc2gtZWQyNTUxOQAAACCMJc13YBJ9mdDDXiXuXP59kW7hfj760NPNslj0WqlCng\n"                 \
	"AAAEAOp67dPzMo3LRtJ6vhWRnqXrxXvWymcmkj8GCAArVa74wlzXdgEn2Z0MNeJe5c/n2R\n"                 \
	"buF+PvrQ082yWPRaqUKeAAAADXBsYWluQGFpcmxvY2s=\n"                                           \
	"-----END OPENSSH PRIVATE KEY-----\n"

#define KEY_ED25519_ENC                                                                            \
	"-----BEGIN OPENSSH PRIVATE KEY-----\n"                                                    \
	"b3BlbnNzaC1rZXktdjEAAAAACmFlczI1Ni1jdHIAAAAGYmNyeXB0AAAAGAAAABA1C1Od5a\n"                 \
	"4BUK+SyO6aqe1bAAAAEAAAAAEAAAAzAAAAC3NzaC1lZDI1NTE5AAAAILvQd1nlgdexT7Tp\n"                 \
	"mscZjl9Z7YrDc0C+MisQzuyIkdvVAAAAkAjBJbHQx4MCbuXqkBfvRXOxKkIySllknSFsQ6\n"                 \
	"q64BcmuDCwhGrtlDmNsckLFjhHdmw6LokvyaynyPW9XIZ9DkSkv4xNHrqE/x4tGihLra6r\n"                 \
	"4kYm35x5VYAtAaKthSxwDoTXYZEiHLnbP8pKUxwo3JY+NoIn+4CbcPCtNMLtAkiYhs6+LE\n"                 \
	"VpaIknQHbaG4nqLw==\n"                                                                     \
	"-----END OPENSSH PRIVATE KEY-----\n"

#define KEY_ECDSA_ENC                                                                              \
	"-----BEGIN OPENSSH PRIVATE KEY-----\n"                                                    \
	"b3BlbnNzaC1rZXktdjEAAAAACmFlczI1Ni1jdHIAAAAGYmNyeXB0AAAAGAAAABD6ozLsma\n"                 \
	"75SDBiIHtRvaqfAAAAEAAAAAEAAABoAAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlz\n"                 \
	"dHAyNTYAAABBBG44h5a5oZA+sZrkdN31hF3Gueg2Pt3sE1EdqnCDpzxSHUahc+Q3TicivD\n"                 \
	"sCuYCqWnAGxbCCV3GjpgauiEgFTdsAAACw+mP292tbBoDXyBcF7minMr5BgD16iiMdbZLf\n"                 \
	"EYnEHF1zN4KnUg5k8Ry+w8ekQcA9weukoFHbt+LkqN57jaJLFY5yJCAPkm1/j1Mmi6jBt0\n"                 \
	"TlUpzcCZacsNSgIhO/m1euAUTo8GgaVV5v+zJu/1IoK+gSSCdxRF7+NKE3d2W25r8lOJhh\n"                 \
	"Sa+Nc0B2H8kZL/VtMzxZ7WyTAmnWWX+335FmU/WTlxObSMjfk3AT/ZSpW2w=\n"                           \
	"-----END OPENSSH PRIVATE KEY-----\n"

#define KEY_RSA_ENC                                                                                \
	"-----BEGIN OPENSSH PRIVATE KEY-----\n"                                                    \
	"b3BlbnNzaC1rZXktdjEAAAAACmFlczI1Ni1jdHIAAAAGYmNyeXB0AAAAGAAAABCCb5Y0uV\n"                 \
	"sywaNbg9OMz0FWAAAAEAAAAAEAAACXAAAAB3NzaC1yc2EAAAADAQABAAAAgQDdE1FHurNt\n"                 \
	"9CrM14s510E00ZeUKH4d6WUSRwB9dP1Vr/M1OHyfoV0KSFVaRJoi6zBZmeDDlAOPmctcp1\n"                 \
	"94a0e2rOpXcJL0t02qnn7H7bKvL3K7IdGka58BgTpHv4AmxgozRftMj4CqP2dPjKmXluBt\n"                 \
	"JWHkAA3BhiZZn7ir2bGfDwAAAhD3VOpZ2g5kfqqO+RyHYZzdvAt60yT+tQ+AV5FrXa9kZu\n"                 \
	"sGe4McbAmwe4VBy1ROUgtFigrnPj/pOkCToMRuWH4G47mEGK0i4DD8eXo8faoVUluYCcpD\n"                 \
	"BlEPlGzJSN+sRSOQcTle7X4WyTiSd59KJnbu2i/k/jm85oJAhdoFRZ8kf+OtaMcgk7At3K\n"                 \
	"laRYGLpCarmpbH9gfIlaVbynyAbDejjvmk096SNMhNlLuOyo8kAGYlnfxJZk05kbny0aCR\n"                 \
	"OttQfNU4ATFjtTmbOOjw69ZV7ENTuBgLfWoqEkaQkUK0r3fGYZPMo+ISTanH0C/DnEHJUE\n"                 \
	"hfD9a4GAFUeJfX2eFfBL/vxVqyTI//t/up6x1e7XM7k4hSjGzcaBizL+smBNeoYZ87zbbJ\n"                 \
	"2mWeWsViT6KFd/KoaIFHktjshkuHZSq0TjGiEPucHI5tY6O99mydbN5Ru7kaPISRmCUpvN\n"                 \
	"TIBkGOJTeFmDKpushfDgMYuSS7FmdYwvZFd5+ottHzLb1TZlBb1c8T85rf+yhxkNy0gIzC\n"                 \
	"qRD1KAJUxWCXEd7X5JNamdaw2Osss1VieTToFbIj16mj+9issZbGNZ1X3YOkUxHHn6Mc7g\n"                 \
	"RGPjAvEHbhHIGnUPN6/OlmbS9NZPnWBxzlnMbcio8d3va3plNmSTAVA5M0h7Qgxs+AASG3\n"                 \
	"xXW5yGGihv+KuJsQMWaHTJgpxaP+N0U=\n"                                                       \
	"-----END OPENSSH PRIVATE KEY-----\n"

#define KEY_ECDSA256_PLAIN                                                                         \
	"-----BEGIN OPENSSH PRIVATE KEY-----\n"                                                    \
	"b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAaAAAABNlY2RzYS\n"                 \
	"1zaGEyLW5pc3RwMjU2AAAACG5pc3RwMjU2AAAAQQQZQTaYJSB0tjYkY+pWqhixDvwUMieX\n"                 \
	"q8KpdWoRDKwsRYQbeEGIQc9Aeupum/aehXsGQ6IvOCYwmO/WiERiraXAAAAAsPaSEFL2kh\n"                 \
	"BSAAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBBlBNpglIHS2NiRj\n"                 \
	"6laqGLEO/BQyJ5erwql1ahEMrCxFhBt4QYhBz0B66m6b9p6FewZDoi84JjCY79aIRGKtpc\n"                 \
	"AAAAAhAJ8/PdcH3HtzO2bs2vIOIVtPnSn+veHrnIQBmYBf+dOZAAAAEGVjZHNhMjU2QGFp\n"                 \
	"cmxvY2sBAgMEBQYH\n"                                                                       \
	"-----END OPENSSH PRIVATE KEY-----\n"

#define KEY_ECDSA384_PLAIN                                                                         \
	"-----BEGIN OPENSSH PRIVATE KEY-----\n"                                                    \
	"b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAiAAAABNlY2RzYS\n"                 \
	"1zaGEyLW5pc3RwMzg0AAAACG5pc3RwMzg0AAAAYQS+vTl/7XBdvMifKoBoICkSVIq6fy47\n"                 \
	"w2XbHeMNHSDE6cJOABz0q04MqLfARUhhTcUfeDejFtv7ldRhh27lE4VwZcRwwGgVyU7VI4\n"                 \
	"fdiqyhYYAfN1d0kxSNgEYXsDkQgmUAAADgM18sKzNfLCsAAAATZWNkc2Etc2hhMi1uaXN0\n"                 \
	"cDM4NAAAAAhuaXN0cDM4NAAAAGEEvr05f+1wXbzInyqAaCApElSKun8uO8Nl2x3jDR0gxO\n"                 \
	"nCTgAc9KtODKi3wEVIYU3FH3g3oxbb+5XUYYdu5ROFcGXEcMBoFclO1SOH3YqsoWGAHzdX\n"                 \
	"dJMUjYBGF7A5EIJlAAAAMQDcwxgMdbu/aDmSboxKC3iCdmblkQoNfL6LctfjTMMbmM41MS\n"                 \
	"Nw1CRXoOYUSs7qvtAAAAAQZWNkc2EzODRAYWlybG9jawECAwQFBgc=\n"                                 \
	"-----END OPENSSH PRIVATE KEY-----\n"

#define KEY_ECDSA521_PLAIN                                                                         \
	"-----BEGIN OPENSSH PRIVATE KEY-----\n"                                                    \
	"b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAArAAAABNlY2RzYS\n"                 \
	"1zaGEyLW5pc3RwNTIxAAAACG5pc3RwNTIxAAAAhQQApFEgcE3kE0MMKfd2leqRn5rBhb9v\n"                 \
	"DMkXs65316gG+TzNFpcz13e+tANoR0DhRyiOY8GTSCMpQunuQphpl7TKZmMBi38kVfEFze\n"                 \
	"7gyMIOmD1lDyQK7klB6EgAuCDPCa/ouqjdeuTRHdzgTiGLzKbD4b9PsWHBZjP7bGNsfkA2\n"                 \
	"Afi0RGYAAAEQpkd14KZHdeAAAAATZWNkc2Etc2hhMi1uaXN0cDUyMQAAAAhuaXN0cDUyMQ\n"                 \
	"AAAIUEAKRRIHBN5BNDDCn3dpXqkZ+awYW/bwzJF7Oud9eoBvk8zRaXM9d3vrQDaEdA4Uco\n"                 \
	"jmPBk0gjKULp7kKYaZe0ymZjAYt/JFXxBc3u4MjCDpg9ZQ8kCu5JQehIALggzwmv6Lqo3X\n"                 \
	"rk0R3c4E4hi8ymw+G/T7FhwWYz+2xjbH5ANgH4tERmAAAAQWdTrOKONH9Robwi8fsXQfJg\n"                 \
	"FEbg6YtEFbkb0PRS4dtmA2CQmE6Hjn5HOl097L8ydS3g6NYXjMf1E0HcC3U8XZkPAAAAEG\n"                 \
	"VjZHNhNTIxQGFpcmxvY2sBAgM=\n"                                                             \
	"-----END OPENSSH PRIVATE KEY-----\n"

#define KEY_RSA3072_PLAIN                                                                          \
	"-----BEGIN OPENSSH PRIVATE KEY-----\n"                                                    \
	"b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAABlwAAAAdzc2gtcn\n"                 \
	"NhAAAAAwEAAQAAAYEAtSMOIwp4tpRIJoqxhd5o6quZ35mu9K6ncBxKDD99xd9NCSO/K/Gb\n"                 \
	"4jH0/a+kBqWowC8YSiGe41shea1vbkUG3oTZ1+jZ0fO2OI3YEMNb6/2ADmEFoDf/qjiqQ3\n"                 \
	"xzt8xskl5Jwxa1efFl3MeHIiMzIKWApj0XTH4mbYwDG51GDwh9OPTlG62kLB7DnggYXjc3\n"                 \
	"iRkcQMh/yy5Wl3iOa7IKcdCavqskDJQ7M9PyCbV+A7Ww1Gdx2ZBxm+gbWkiQvwQ+DI6FJ6\n"                 \
	"elRjL22jKE+sa+5dvD30DwtqxBQqwwrl5UNzoxkJgVM/poBMD8e9x6y4B6eTpxl9+pgHpn\n"                 \
	"sDtXRdWXVgt4K6n+/BX1AYYOSbSzCCAFMkf5shyzd0y9SJJYtuIiC0morexFbYmN9R4nSi\n"                 \
	"P05rulqfzOCX4Osrqhl/vCw/ejo0MNXm+VWIv4lfDwJv7520yyCJnZZJ+MFmo5HEu3voIO\n"                 \
	"wjbPIdYUkfOJM+hIk83jCAsYhmw6quuGgci62XfBAAAFiPXy7RD18u0QAAAAB3NzaC1yc2\n"                 \
	"EAAAGBALUjDiMKeLaUSCaKsYXeaOqrmd+ZrvSup3AcSgw/fcXfTQkjvyvxm+Ix9P2vpAal\n"                 \
	"qMAvGEohnuNbIXmtb25FBt6E2dfo2dHztjiN2BDDW+v9gA5hBaA3/6o4qkN8c7fMbJJeSc\n"                 \
	"MWtXnxZdzHhyIjMyClgKY9F0x+Jm2MAxudRg8IfTj05RutpCwew54IGF43N4kZHEDIf8su\n"                 \
	"Vpd4jmuyCnHQmr6rJAyUOzPT8gm1fgO1sNRncdmQcZvoG1pIkL8EPgyOhSenpUYy9toyhP\n"                 \
	"rGvuXbw99A8LasQUKsMK5eVDc6MZCYFTP6aATA/HvcesuAenk6cZffqYB6Z7A7V0XVl1YL\n"                 \
	"eCup/vwV9QGGDkm0swggBTJH+bIcs3dMvUiSWLbiIgtJqK3sRW2JjfUeJ0oj9Oa7pan8zg\n"                 \
	"l+DrK6oZf7wsP3o6NDDV5vlViL+JXw8Cb++dtMsgiZ2WSfjBZqORxLt76CDsI2zyHWFJHz\n"                 \
	"iTPoSJPN4wgLGIZsOqrrhoHIutl3wQAAAAMBAAEAAAGAO7r6j22Fjtdoz2TO01EbEb9Sd1\n"                 \
	"xrR/5L8nkxpcZOCDDxa0EhajE68ST+H6WKljKMagtdnBxoE5raeBBL/XW/pSLz3vHG2ife\n"                 \
	"f9muVSDGsBQg5RzzSPkOUqhq5OQmGIbNipqTAkT7xOFocJxPIF+xHWPV/3uHsk6rB1azM6\n"                 \
	"jyEEUBXgXLgwwIZhAi+3q55l+Y7ZmdKnOzSGHYZgx4EmVcclmSnas7sPY0a4vJdZAmpLyG\n"                 \
	"OhR+g3rRK9MnKedh68tOyELPECZGv7vwQymBKNw1FYLiQ0etSX/dO80qfX2Lx/Jv2Q4TXK\n"                 \
	"ceBeMPa47w7kL6SiIMdUzb7wzJlZ3/bfGvfRSLbwfK/gBpDYSCdiOoB1D3ZNIjDNOBFhdu\n"                 \
	"umTuAFyH/nt/2ekboESIu0ACF/h5fIKwEMji6h5e2kifV2579H43SQmv2YYNB2Ml2+0VHd\n"                 \
	"AyBvxiXffrvaCdk/SIGKpO/QtD4OPH6SS4aguHybVSZU4WkinuNIe4Zv7blA1CTOgdAAAA\n"                 \
	"wQC2hJaKZMjW9ufxJd/6iHfE28gBq13athdtjuSpOlT8V1HahEr6LZBqIorszUiCMT8+PA\n"                 \
	"46QNL2sWH+I+7zPS3mxQGBgKJbb/xUxdofQ3qjKhADtPVbeIg0tIFtOlJpHnTwnD4+y84v\n"                 \
	"Hmk2jJk5LaaUGl3lWvpewVpU5JtMdldksxArumLg+xA7GYlw89IU5l142Pc1r4hifVIq7F\n"                 \
	"gTeUSkreHKcm6w1ZMnZhy1azKh0u/55ryyvn1iFyte5zUhdm4AAADBAOmDLNuU45Sd55y5\n"                 \
	"DBMEaSivAnGhzeUYv4PK8/8ebe8CvhMNYnKR65huiJilAtOGOQcydqORY6Uy5yHrq/UtkW\n"                 \
	"xomlzk2gDJWFrksrtl2204nDj0fVVGazOALK6v5A0hhm6hkd/zHhllNzYhLatnhIWy/3+6\n"                 \
	"cxWJZhEmw4YnxqXkfYh7ZifkqdP6q8giWckX5fk0R/nkr6cIc8s6bmviGmekXGxggqNny6\n"                 \
	"M9QGX8Mrwwwv+1M5DSIUY+B6WSinwMswAAAMEAxpSoZipj5fri4FhuNEddN43q7BOS3b10\n"                 \
	"vi0bJzMvjfNK77NrVBPQ4j8Io9lfGhUvvxiXzPlP1/pFkh5g0UDRM5bZQ5EzRSc2yiAkyP\n"                 \
	"SKHzW/+N6j4XfWK7LTdgH1/gdxD8S3aszwTOb6Pp49cAh71YkNCljdq+fy0FPSUWURXoCP\n"                 \
	"OK3Xq/u4n320QKosPcjxnG/kOB4Diw0+H1sZdiNffPWLDX+sNYAeOydd1via6SbVkRbt8e\n"                 \
	"UkrIH3mw/EzYu7AAAAD3JzYTMwNzJAYWlybG9jawECAw==\n"                                         \
	"-----END OPENSSH PRIVATE KEY-----\n"

#define KEY_ECDSA256_FP "SHA256:OXZYCNxz+WdXxmdWgjkb4U0LhgL/Kwo/QNBvW5LluDg"
#define KEY_ECDSA384_FP "SHA256:mg9Ij9NIkxmnmKLK+9Ersr0QBnRN8RTUDxzibOKO190"
#define KEY_ECDSA521_FP "SHA256:IDWEUbIQoBUdGtpWjL1ALVVIMDQuejygQitH2G66orA"
#define KEY_RSA3072_FP "SHA256:LK/VeqidHgFL/DUL8cNESGB4NsOTxMySyuwDJIt6Gmc"
