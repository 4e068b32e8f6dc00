package access

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"
)

// A token's secret is "sl1.<base64url(id)>.<base64url(32 random bytes)>": it carries its id,
// so that checking it is one read of the token's object. The store keeps only a salted hash
// of it: HMAC-SHA256 keyed with the token's random salt. (The secret's 256 random bits make
// guessing it from the hash hopeless; the salt makes equal secrets hash apart.) Any daemon
// on the bucket can check a secret: no key is shared beyond the objects.

const (
	secretVersion = "sl1"
	secretBytes   = 32
	saltBytes     = 16
)

var b64 = base64.RawURLEncoding

// newSecret returns a fresh secret for id.
func newSecret(id string) (string, error) {
	var r [secretBytes]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", err
	}
	return secretVersion + "." + b64.EncodeToString([]byte(id)) + "." + b64.EncodeToString(r[:]), nil
}

// secretID returns the id a secret names, or false if it is not shaped as one of ours.
func secretID(secret string) (string, bool) {
	v, rest, ok := strings.Cut(secret, ".")
	if !ok || v != secretVersion {
		return "", false
	}
	enc, random, ok := strings.Cut(rest, ".")
	if !ok {
		return "", false
	}
	id, err := b64.DecodeString(enc)
	if err != nil || ValidateID(string(id)) != nil {
		return "", false
	}
	if r, err := b64.DecodeString(random); err != nil || len(r) != secretBytes {
		return "", false
	}
	return string(id), true
}

func newSalt() ([]byte, error) {
	salt := make([]byte, saltBytes)
	_, err := rand.Read(salt)
	return salt, err
}

// hashSecret is the stored form of a secret: HMAC-SHA256 keyed with the salt.
func hashSecret(salt []byte, secret string) []byte {
	m := hmac.New(sha256.New, salt)
	m.Write([]byte(secret))
	return m.Sum(nil)
}

// secretMatches reports, in constant time, whether secret hashes to want under salt.
func secretMatches(salt, want []byte, secret string) bool {
	return hmac.Equal(hashSecret(salt, secret), want)
}

// cacheKey keys the authorizer's cache: a hash of the secret, so that the cache holds no
// secret.
func cacheKey(secret string) [sha256.Size]byte { return sha256.Sum256([]byte(secret)) }
