#pragma once

/* Test keys made for airlock's unit tests by OpenSSH 9.2's ssh-keygen: Ed25519 without a
 * passphrase ("plain@airlock"), and Ed25519, ECDSA P-256 and RSA 1024 with the passphrase
 * "correct horse". Throwaway keys: nothing trusts them. */

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
